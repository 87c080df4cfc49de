// The official @a2a-js/sdk client (1.x) as a peer of a2a_sync's server (issue 15).
//
// Run: `node a2a_js_client.mjs <base-url> <binding> <revision> <scenario>` from a directory
// whose node_modules has @a2a-js/sdk; tests/server/test_interop_a2a_js_client.py drives it.
//   binding:  JSONRPC | HTTP+JSON (the client's preferred transport)
//   revision: 1.0 | 0.3 (0.3: the SDK's legacyCompat transports, on the card's 0.3 interface)
//   scenario: one of SCENARIOS below.
//
// The client resolves the card at <base-url>/.well-known/agent-card.json and picks the
// interface of the binding and revision asked for. The script reports what it observed as
// JSON; the Python test makes the assertions. Lines on stdout:
//   {"sync": "<name>", ...}  the script waits for one line on stdin before going on (the
//                            test does its part first: waits for the agent, releases it);
//   {"result": {...}}        the last line: what the scenario observed.
// An unexpected failure exits 1 with the error on stderr.
import { createInterface } from "node:readline";
import { randomUUID } from "node:crypto";

import { Role, TaskState } from "@a2a-js/sdk";
import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from "@a2a-js/sdk/client";
import * as errors from "@a2a-js/sdk/errors";

const [baseUrl, binding, revision, scenario] = process.argv.slice(2);

const stdin = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

function emit(line) {
  process.stdout.write(JSON.stringify(line) + "\n");
}

// Tell the test where we are, and wait for its answer (one line on stdin).
async function sync(name, extra = {}) {
  emit({ sync: name, ...extra });
  const { done } = await stdin.next();
  if (done) throw new Error(`stdin closed while waiting after sync ${name}`);
}

const legacyCompat = { enabled: revision === "0.3" };

async function connect() {
  const resolver = new DefaultAgentCardResolver({ legacyCompat });
  const card = await resolver.resolve(baseUrl);
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ legacyCompat }), new RestTransportFactory({ legacyCompat })],
    preferredTransports: [binding],
    cardResolver: resolver,
  });
  // The card lists each binding for 1.0 and 0.3; keep the revision under test, so the
  // factory (which prefers 1.0) picks the interface this run is about.
  const interfaces = card.supportedInterfaces.filter((i) => i.protocolVersion === revision);
  const client = await factory.createFromAgentCard({ ...card, supportedInterfaces: interfaces });
  return { card, client };
}

function message(text, taskId = "") {
  return {
    messageId: randomUUID(),
    contextId: "",
    taskId,
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function request(text, { taskId = "", returnImmediately = false, historyLength } = {}) {
  return {
    tenant: "",
    message: message(text, taskId),
    configuration: {
      acceptedOutputModes: [],
      taskPushNotificationConfig: undefined,
      historyLength,
      returnImmediately,
    },
    metadata: undefined,
  };
}

const texts = (parts) => (parts ?? []).filter((p) => p.content?.$case === "text").map((p) => p.content.value);
const stateName = (status) => TaskState[status?.state] ?? String(status?.state);

// A task or message as plain JSON (enums by name).
function describeResult(result) {
  if ("messageId" in result) {
    return { kind: "message", role: Role[result.role], text: texts(result.parts).join("") };
  }
  return {
    kind: "task",
    id: result.id,
    contextId: result.contextId,
    state: stateName(result.status),
    statusText: texts(result.status?.message?.parts).join(""),
    artifacts: result.artifacts.map((a) => ({ name: a.name, text: texts(a.parts).join("") })),
    history: result.history.map((m) => texts(m.parts).join("")),
  };
}

function describeEvent(event) {
  const { $case, value } = event.payload;
  switch ($case) {
    case "task":
    case "message":
      return { ...describeResult(value), kind: $case };
    case "statusUpdate":
      return { kind: $case, taskId: value.taskId, state: stateName(value.status) };
    case "artifactUpdate":
      return {
        kind: $case,
        taskId: value.taskId,
        artifactId: value.artifact.artifactId,
        text: texts(value.artifact.parts).join(""),
        append: value.append,
        lastChunk: value.lastChunk,
      };
    default:
      return { kind: String($case) };
  }
}

const SEMANTIC = [
  "TaskNotFoundError",
  "TaskNotCancelableError",
  "PushNotificationNotSupportedError",
  "UnsupportedOperationError",
  "ContentTypeNotSupportedError",
  "InvalidAgentResponseError",
  "ExtendedAgentCardNotConfiguredError",
  "ExtensionSupportRequiredError",
  "VersionNotSupportedError",
  "RequestMalformedError",
];

// What a call raised: the SDK's semantic class (by instanceof), its transport details.
async function failure(call) {
  try {
    const value = await call();
    return { raised: false, value: String(value) };
  } catch (err) {
    return {
      raised: true,
      a2aError: err instanceof errors.A2AError,
      classes: SEMANTIC.filter((name) => err instanceof errors[name]),
      name: err?.name,
      transport: err?.transport,
      statusCode: err?.statusCode,
      envelopeCode: err?.envelopeCode,
      reason: err?.reason,
      message: String(err?.message),
    };
  }
}

async function collect(stream) {
  const events = [];
  for await (const event of stream) events.push(describeEvent(event));
  return events;
}

function pushConfig(taskId, id, url) {
  return { tenant: "", id, taskId, url, token: "tok", authentication: undefined };
}

const SCENARIOS = {
  // Card resolution, the transport chosen, the card the client holds.
  async card({ card, client }) {
    const held = await client.getAgentCard();
    return {
      name: card.name,
      interfaces: card.supportedInterfaces.map((i) => [i.protocolBinding, i.protocolVersion, i.url]),
      streaming: card.capabilities?.streaming,
      transport: client.transport.protocolName,
      protocolVersion: client.protocolVersion,
      heldName: held.name,
      skills: held.skills.map((s) => s.id),
    };
  },

  // SendMessage (a task, a direct message), then GetTask with and without history.
  async send({ client }) {
    const task = await client.sendMessage(request("hello"));
    const reply = await client.sendMessage(request("reply"));
    const trimmed = await client.getTask({ tenant: "", id: task.id, historyLength: 0 });
    const full = await client.getTask({ tenant: "", id: task.id });
    return {
      task: describeResult(task),
      reply: describeResult(reply),
      trimmed: describeResult(trimmed),
      full: describeResult(full),
    };
  },

  // SendStreamingMessage with chunked artifacts; then an input_required round trip.
  async stream({ client }) {
    const events = await collect(client.sendMessageStream(request("chunks 3")));
    const question = await collect(client.sendMessageStream(request("need input")));
    const answer = await collect(client.sendMessageStream(request("Paris", { taskId: question[0].id })));
    return { events, question, answer };
  },

  // CancelTask on a running task; on a finished one (TaskNotCancelable).
  async cancel({ client }) {
    const started = await client.sendMessage(request("wait", { returnImmediately: true }));
    await sync("started", { taskId: started.id });
    const canceled = await client.cancelTask({ tenant: "", id: started.id });
    const done = await client.sendMessage(request("hello"));
    return {
      started: describeResult(started),
      canceled: describeResult(canceled),
      notCancelable: await failure(() => client.cancelTask({ tenant: "", id: done.id })),
    };
  },

  // SubscribeToTask mid-task (the agent is released once the first event is in), then
  // to a finished task (UnsupportedOperation).
  async subscribe({ client }) {
    const started = await client.sendMessage(request("wait", { returnImmediately: true }));
    await sync("started", { taskId: started.id });
    const events = [];
    for await (const event of client.resubscribeTask({ tenant: "", id: started.id })) {
      events.push(describeEvent(event));
      if (events.length === 1) await sync("subscribed");
    }
    const settled = await failure(() => collect(client.resubscribeTask({ tenant: "", id: started.id })));
    return { taskId: started.id, events, settled };
  },

  // Push notification config CRUD on a task, and on a task that does not exist.
  async push({ client }) {
    const task = await client.sendMessage(request("need input"));
    const created = await client.createTaskPushNotificationConfig(
      pushConfig(task.id, "cfg-1", "https://hooks.example/a"),
    );
    const got = await client.getTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: "cfg-1" });
    const listed = await client.listTaskPushNotificationConfig({
      tenant: "",
      taskId: task.id,
      pageSize: 0,
      pageToken: "",
    });
    await client.deleteTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: "cfg-1" });
    const after = await client.listTaskPushNotificationConfig({
      tenant: "",
      taskId: task.id,
      pageSize: 0,
      pageToken: "",
    });
    const ids = (configs) => configs.map((c) => c.id);
    return {
      created: { id: created.id, taskId: created.taskId, url: created.url, token: created.token },
      got: { id: got.id, url: got.url },
      listed: ids(listed.configs),
      after: ids(after.configs),
      missingTask: await failure(() =>
        client.createTaskPushNotificationConfig(pushConfig("no-such-task", "cfg-1", "https://hooks.example/a")),
      ),
      missingConfig: await failure(() =>
        client.getTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: "cfg-1" }),
      ),
    };
  },

  // Errors: an unknown task on every task operation; a message to a finished task.
  async errors({ client }) {
    const done = await client.sendMessage(request("hello"));
    return {
      getTask: await failure(() => client.getTask({ tenant: "", id: "no-such-task" })),
      cancelTask: await failure(() => client.cancelTask({ tenant: "", id: "no-such-task" })),
      subscribe: await failure(() => collect(client.resubscribeTask({ tenant: "", id: "no-such-task" }))),
      unknownTaskMessage: await failure(() => client.sendMessage(request("hi", { taskId: "no-such-task" }))),
      finishedTaskMessage: await failure(() => client.sendMessage(request("again", { taskId: done.id }))),
    };
  },
};

const run = SCENARIOS[scenario];
if (run === undefined) {
  console.error(`unknown scenario ${scenario}; one of ${Object.keys(SCENARIOS).join(", ")}`);
  process.exit(2);
}
try {
  const result = await run(await connect());
  // stdout is a pipe (asynchronous in node): exit once the line is written.
  process.stdout.write(JSON.stringify({ result }) + "\n", () => process.exit(0));
} catch (err) {
  console.error(err?.stack ?? String(err));
  process.exit(1);
}
