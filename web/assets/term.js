// agentctl web: a session's terminal in xterm.js over a WebSocket. Keys go
// as binary messages, sizes as {"type":"resize"}; the first output repaints
// the screen as it is.
(function () {
  "use strict";
  var box = document.getElementById("term");
  var state = document.getElementById("termstate");
  if (!box || !window.Terminal) { return; }
  var term = new window.Terminal({ cursorBlink: true, scrollback: 5000, fontSize: 14 });
  var fit = new window.FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(box);
  fit.fit();
  var proto = location.protocol === "https:" ? "wss://" : "ws://";
  var url = proto + location.host + box.getAttribute("data-ws") + "?rows=" + term.rows + "&cols=" + term.cols;
  var ws = new WebSocket(url);
  ws.binaryType = "arraybuffer";
  var enc = new TextEncoder();
  function say(s) { if (state) { state.textContent = s; } }
  ws.onopen = function () { say("attached"); window.agentctlTermOpen = true; };
  ws.onmessage = function (ev) {
    if (typeof ev.data === "string") { say("ended: " + ev.data); return; }
    term.write(new Uint8Array(ev.data));
  };
  ws.onclose = function (ev) { say(ev.reason ? "detached: " + ev.reason : "detached"); };
  term.onData(function (d) { if (ws.readyState === 1) { ws.send(enc.encode(d)); } });
  term.onBinary(function (d) {
    if (ws.readyState !== 1) { return; }
    var b = new Uint8Array(d.length);
    for (var i = 0; i < d.length; i++) { b[i] = d.charCodeAt(i) & 255; }
    ws.send(b);
  });
  term.onResize(function (s) {
    if (ws.readyState === 1) { ws.send(JSON.stringify({ type: "resize", rows: s.rows, cols: s.cols })); }
  });
  window.addEventListener("resize", function () { fit.fit(); });
  term.focus();
  window.agentctlTerm = term;
})();
