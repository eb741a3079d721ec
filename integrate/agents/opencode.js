// agentctl's OpenCode plugin, installed by `agentctl integrate opencode`
// (`agentctl integrate --remove opencode` deletes this file). It reports
// this OpenCode's session events to agentctl by running `agentctl hook
// opencode --event E` with the event's JSON on stdin, and gives OpenCode
// the answer to a permission when one was decided through agentctl. It
// never throws into OpenCode and never holds it up: OpenCode does not
// wait for event hooks, and without an answer it asks as usual.
import { spawn } from "node:child_process";

const HOOK = [];

// A report's hook is killed after REPORT_MS; a permission's waits for the
// person's answer up to AGENTCTL_PERMISSION_WAIT seconds (OpenCode shows
// its own prompt meanwhile: whichever answers first wins).
const REPORT_MS = 3000;
const ASK_MS = (() => {
  const s = Number(process.env.AGENTCTL_PERMISSION_WAIT);
  return Number.isFinite(s) && s >= 0 && process.env.AGENTCTL_PERMISSION_WAIT !== "" ? s * 1000 : 600000;
})();
const BACKSTOP_MS = 30000;
const MAX_REPORT = 256 * 1024;
const MAX_REPLY = 64 * 1024;
const REPORTED = new Set([
  "session.created",
  "session.status",
  "session.idle",
  "session.error",
  "permission.asked",
  "permission.replied",
  "question.asked",
]);

function runHook(event, payload, limitMs) {
  return new Promise((resolve) => {
    let out = "";
    let done = false;
    let timer;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(out);
    };
    let child;
    try {
      child = spawn(HOOK[0], [...HOOK.slice(1), "opencode", "--integration", "--event", event], {
        stdio: ["pipe", "pipe", "ignore"],
      });
    } catch {
      return resolve("");
    }
    const kill = () => {
      try { child.kill("SIGKILL"); } catch {}
      finish();
    };
    // The hook's time counts from when it has its report: a busy event
    // loop that writes it late must not kill it before it could send it.
    // Until then, a backstop (a hook that never reads its input).
    timer = setTimeout(kill, limitMs + BACKSTOP_MS);
    child.on("error", finish);
    child.on("close", finish);
    child.stdout.on("data", (b) => {
      if (out.length < MAX_REPLY) out += b;
    });
    child.stdin.on("error", () => {});
    child.stdin.end(payload, () => {
      if (done) return;
      clearTimeout(timer);
      timer = setTimeout(kill, limitMs);
    });
    try { child.unref(); } catch {}
  });
}

function decision(out) {
  for (const line of out.split("\n").reverse()) {
    const t = line.trim();
    if (!t.startsWith("{")) continue;
    try {
      const d = JSON.parse(t);
      if (d && (d.behavior === "allow" || d.behavior === "deny")) return d;
    } catch {}
  }
  return undefined;
}

async function answer(client, props, d) {
  const allow = d.behavior === "allow";
  const message = typeof d.message === "string" && d.message ? d.message : undefined;
  if (client?.permission?.reply) {
    await client.permission.reply({ requestID: props.id, reply: allow ? "once" : "reject", ...(allow || !message ? {} : { message }) });
    return;
  }
  if (client?.postSessionIdPermissionsPermissionId) {
    await client.postSessionIdPermissionsPermissionId({
      path: { id: props.sessionID, permissionID: props.id },
      body: { response: allow ? "once" : "reject" },
    });
  }
}

export const AgentctlPlugin = async (input) => {
  const directory = String(input?.directory ?? process.cwd());
  const client = input?.client;
  const status = new Map();
  // A subagent's session → the session the person started (its root).
  const parents = new Map();
  const rootOf = (id) => parents.get(id) ?? id;
  return {
    event: async ({ event }) => {
      try {
        if (!event || !REPORTED.has(event.type) || HOOK.length === 0) return;
        let props = event.properties ?? {};
        if (typeof props.sessionID !== "string") return;
        let reported = props;
        if (event.type === "session.created") {
          // The first sign of a session (at its first prompt, before its
          // status): the process is tied to it at once. A subagent's
          // session is its parent's business: noted, not reported.
          const parent = props.info?.parentID;
          if (typeof parent === "string" && parent) {
            parents.set(props.sessionID, rootOf(parent));
            if (parents.size > 1000) parents.clear();
            return;
          }
          reported = { sessionID: props.sessionID };
        }
        const root = parents.get(props.sessionID);
        if (root !== undefined) {
          // A subagent's: its status is not the session's the person sees
          // (which stays busy while it works); what it asks is, and is
          // reported as that session's, answered through its own ids.
          if (!event.type.startsWith("permission.") && event.type !== "question.asked") return;
          reported = { ...props, sessionID: root };
        }
        if (event.type === "session.status") {
          // One report per change, not per repeat.
          const t = props.status?.type;
          if (status.get(props.sessionID) === t) return;
          status.set(props.sessionID, t);
          if (status.size > 1000) status.clear();
        }
        const sent = Date.now();
        let payload = JSON.stringify({ directory, sent, event: { id: event.id, type: event.type, properties: reported } });
        if (payload.length > MAX_REPORT) {
          const { metadata, ...rest } = reported;
          payload = JSON.stringify({ directory, sent, event: { id: event.id, type: event.type, properties: rest } });
          if (payload.length > MAX_REPORT) return;
        }
        if (event.type !== "permission.asked") {
          await runHook(event.type, payload, REPORT_MS);
          return;
        }
        const d = decision(await runHook(event.type, payload, ASK_MS));
        if (d) await answer(client, props, d);
      } catch {
        // Never into OpenCode.
      }
    },
  };
};
