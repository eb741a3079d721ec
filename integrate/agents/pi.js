// agentctl's Pi extension, installed by `agentctl integrate pi`
// (`agentctl integrate --remove pi` deletes this file). It reports this
// Pi's session events to agentctl by running `agentctl hook pi --event E`
// with the event's JSON on stdin. It never throws into Pi and holds up
// nothing: a report is not awaited, and a tool call waits for a decision
// only when AGENTCTL_PI_ASK_SECONDS is set (at most that long; without a
// decision the tool runs as it would have).
import { spawn } from "node:child_process";

const HOOK = [];

const REPORT_MS = 3000;
const ASK_MS = (() => {
  const s = Number(process.env.AGENTCTL_PI_ASK_SECONDS);
  return Number.isFinite(s) && s > 0 ? s * 1000 : 0;
})();
const BACKSTOP_MS = 30000;
const MAX_REPORT = 256 * 1024;
const MAX_REPLY = 64 * 1024;

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
      child = spawn(HOOK[0], [...HOOK.slice(1), "pi", "--integration", "--event", event], {
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

function payloadOf(type, ctx, extra) {
  const base = {
    type,
    sessionId: String(ctx?.sessionManager?.getSessionId?.() ?? ""),
    cwd: String(ctx?.cwd ?? process.cwd()),
    hasUI: Boolean(ctx?.hasUI),
    sent: Date.now(),
  };
  let p = JSON.stringify({ ...base, ...extra });
  if (p.length > MAX_REPORT) p = JSON.stringify({ ...base, ...extra, input: undefined });
  return p.length > MAX_REPORT ? "" : p;
}

function report(type, ctx, extra) {
  try {
    if (HOOK.length === 0) return;
    const p = payloadOf(type, ctx, extra ?? {});
    if (p) runHook(type, p, REPORT_MS).catch(() => {});
  } catch {
    // Never into Pi.
  }
}

export default function agentctl(pi) {
  for (const type of ["session_start", "agent_start", "turn_end", "agent_end", "session_shutdown"]) {
    pi.on(type, (_event, ctx) => {
      report(type, ctx);
    });
  }
  pi.on("tool_call", async (event, ctx) => {
    try {
      const extra = { toolName: String(event?.toolName ?? ""), toolCallId: String(event?.toolCallId ?? ""), input: event?.input };
      if (ASK_MS <= 0 || HOOK.length === 0) {
        report("tool_call", ctx, extra);
        return undefined;
      }
      const p = payloadOf("tool_call", ctx, { ...extra, ask: true });
      if (!p) return undefined;
      const d = decision(await runHook("tool_call", p, ASK_MS));
      if (d && d.behavior === "deny") {
        return { block: true, reason: typeof d.message === "string" && d.message ? d.message : "denied through agentctl" };
      }
    } catch {
      // Never into Pi.
    }
    return undefined;
  });
}
