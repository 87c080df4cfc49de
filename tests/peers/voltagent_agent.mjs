// A VoltAgent 2 A2A agent (@voltagent/a2a-server behind @voltagent/server-hono) on a mock model.
//
// Run: `node voltagent_agent.mjs` (from a directory whose node_modules has the VoltAgent
// packages). It listens on 127.0.0.1 port 0, prints `PORT <n>` once bound, and serves
// until terminated; start it through tests/peers/third_party.py. The app is VoltAgent's
// own Hono app (createVoltAgentApp): its A2A routes are `/.well-known/<id>/agent-card.json`
// and `/a2a/<id>`, and its SSE frames carry an ASCII RS before each event's JSON.
//
// The mock model (ai/test MockLanguageModelV3, no network) answers the last user text:
//   "chunks N"  -> streams "0," "1," ... "N-1,"
//   "slow N"    -> the same with 50 ms between chunks
//   "fail"      -> the model errors: the task fails
//   anything    -> echoes the text
//
// The test machine has no network but loopback: @voltagent/core fetches a model registry
// from the internet when it loads, so fetch is limited to loopback before it is imported
// (hence the dynamic imports below).
const loopbackFetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
  if (!["127.0.0.1", "localhost", "[::1]"].includes(url.hostname)) {
    return Promise.reject(new Error(`test peer: no network (${url.hostname})`));
  }
  return loopbackFetch(input, init);
};
const { createAdaptorServer } = await import("@hono/node-server");
const { A2AServer } = await import("@voltagent/a2a-server");
const { Agent, VoltAgent } = await import("@voltagent/core");
const { createVoltAgentApp } = await import("@voltagent/server-hono");
const { MockLanguageModelV3, simulateReadableStream } = await import("ai/test");

const AGENT_ID = "volt";

function lastUserText(prompt) {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const message = prompt[i];
    if (message.role !== "user") continue;
    const parts = Array.isArray(message.content) ? message.content : [];
    return parts.filter((p) => p.type === "text").map((p) => p.text).join("");
  }
  return "";
}

function script(text) {
  const [word, count] = text.trim().split(/\s+/, 2);
  if (word === "fail") throw new Error("the agent failed on purpose");
  if ((word === "chunks" || word === "slow") && /^\d+$/.test(count ?? "")) {
    const pieces = Array.from({ length: Number(count) }, (_, i) => `${i},`);
    return { pieces, delay: word === "slow" ? 50 : 0 };
  }
  return { pieces: [text], delay: 0 };
}

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

const model = new MockLanguageModelV3({
  doGenerate: async ({ prompt }) => {
    const { pieces } = script(lastUserText(prompt));
    return {
      content: [{ type: "text", text: pieces.join("") }],
      finishReason: { unified: "stop", raw: "stop" },
      usage,
      warnings: [],
    };
  },
  doStream: async ({ prompt }) => {
    const { pieces, delay } = script(lastUserText(prompt));
    const chunks = [
      { type: "stream-start", warnings: [] },
      { type: "text-start", id: "t" },
      ...pieces.map((delta) => ({ type: "text-delta", id: "t", delta })),
      { type: "text-end", id: "t" },
      { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage },
    ];
    return { stream: simulateReadableStream({ chunks, chunkDelayInMs: delay }) };
  },
});

const agent = new Agent({
  id: AGENT_ID,
  name: "volt",
  purpose: "A scripted VoltAgent for interop tests",
  instructions: "Answer as scripted.",
  model,
});

let started = null;

new VoltAgent({
  agents: { [AGENT_ID]: agent },
  a2aServers: { [AGENT_ID]: new A2AServer({ id: AGENT_ID, name: "volt", version: "1.0.0" }) },
  server: (deps) => ({
    async start() {
      const { app } = await createVoltAgentApp(deps, {}, 0);
      const server = createAdaptorServer({ fetch: app.fetch.bind(app) });
      await new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(0, "127.0.0.1", resolve);
      });
      started = server;
      process.stdout.write(`PORT ${server.address().port}\n`);
      return { port: server.address().port };
    },
    async stop() {
      started?.close();
    },
    isRunning() {
      return started !== null;
    },
  }),
});

process.on("SIGTERM", () => {
  started?.close();
  process.exit(0);
});
