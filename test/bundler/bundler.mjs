// A local bundler with the Turbo upload API, in front of arlocal, for ucl's
// end-to-end tests. It is a stand-in for ArDrive Turbo (upload.ardrive.io):
//
//   POST /v1/tx              body: one signed ANS-104 data item
//                            (Content-Type: application/octet-stream).
//                            The item is verified with arbundles (the
//                            reference implementation): format, tags,
//                            signature. 200 {"id", "owner", "winc": "0", …}
//                            once accepted, 400 when it does not verify,
//                            413 over --max-bytes.
//   GET  /v1/tx/{id}/status  {"status": "NEW"|"CONFIRMED"|"FINALIZED",
//                            "bundleId"}; 404 for an id it does not hold.
//
// Accepted items are posted to arlocal as an ANS-104 bundle transaction
// (Bundle-Format binary, Bundle-Version 2.0.0) signed by the bundler's own
// wallet (arweave-js), and a block is mined, so the gateway serves them as
// bundled items exactly as Turbo's would appear on arweave.net.
//
// For fault tests, POST /_fault {"mode": …} sets how the next uploads are
// answered: "ok" (default), "402", "413", "500" (5xx), "hang" (never
// answers), "drop" (answers 200 and forgets the item: it is never bundled
// and its status is 404). GET /_log lists every upload it received (id,
// size, verified, status answered) so tests see what reached it.
//
// Usage: node bundler.mjs --gateway http://127.0.0.1:PORT [--port 0]
// It prints "listening PORT" on stdout once ready.
import http from "node:http";
import crypto from "node:crypto";
import { DataItem } from "arbundles";
import ArweaveMod from "arweave";

const Arweave = ArweaveMod.default ?? ArweaveMod;

function arg(name, def) {
  const i = process.argv.indexOf("--" + name);
  return i > 0 ? process.argv[i + 1] : def;
}
const gateway = new URL(arg("gateway", "http://127.0.0.1:1984"));
const port = Number(arg("port", "0"));
const maxBytes = Number(arg("max-bytes", String(10 << 20)));

const arweave = Arweave.init({
  host: gateway.hostname,
  port: Number(gateway.port || 80),
  protocol: gateway.protocol.replace(":", ""),
});
const wallet = await arweave.wallets.generate();
const address = await arweave.wallets.jwkToAddress(wallet);
await fetch(`${gateway.origin}/mint/${address}/1000000000000000`);

let fault = "ok";
const items = new Map(); // id -> {status, bundleId}
const log = [];
let queue = []; // {id, binary} accepted, not yet bundled
let flushing = Promise.resolve();

function b64urlDecode(s) {
  return Buffer.from(s.replace(/-/g, "+").replace(/_/g, "/"), "base64");
}

function le32(n) {
  const b = Buffer.alloc(32);
  b.writeBigUInt64LE(BigInt(n), 0);
  return b;
}

// bundle builds the ANS-104 bundle binary of items: the item count, then
// per item its size and raw id, then the items.
function bundle(batch) {
  const head = [le32(batch.length)];
  for (const it of batch) head.push(le32(it.binary.length), b64urlDecode(it.id));
  return Buffer.concat([...head, ...batch.map((it) => it.binary)]);
}

async function flush() {
  const batch = queue;
  queue = [];
  if (batch.length === 0) return;
  const tx = await arweave.createTransaction({ data: bundle(batch) }, wallet);
  tx.addTag("Bundle-Format", "binary");
  tx.addTag("Bundle-Version", "2.0.0");
  await arweave.transactions.sign(tx, wallet);
  const res = await arweave.transactions.post(tx);
  if (res.status !== 200) {
    for (const it of batch) items.get(it.id).status = "FAILED";
    console.error(`bundler: posting bundle ${tx.id} failed: ${res.status} ${JSON.stringify(res.data)}`);
    return;
  }
  await fetch(`${gateway.origin}/mine`);
  for (const it of batch) Object.assign(items.get(it.id), { status: "CONFIRMED", bundleId: tx.id });
}

function send(res, status, body) {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
}

async function readBody(req, limit) {
  const chunks = [];
  let n = 0;
  for await (const c of req) {
    n += c.length;
    if (n > limit) return null;
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}

const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url, "http://x");
    if (req.method === "POST" && url.pathname === "/_fault") {
      fault = JSON.parse((await readBody(req, 1 << 10)).toString()).mode;
      return send(res, 200, { mode: fault });
    }
    if (req.method === "GET" && url.pathname === "/_log") return send(res, 200, log);
    if (req.method === "POST" && url.pathname === "/_flush") {
      flushing = flushing.then(flush);
      await flushing;
      return send(res, 200, {});
    }
    const st = url.pathname.match(/^\/v1\/tx\/([A-Za-z0-9_-]{43})\/status$/);
    if (req.method === "GET" && st) {
      const it = items.get(st[1]);
      if (!it) return send(res, 404, { error: "not found" });
      return send(res, 200, { status: it.status, bundleId: it.bundleId, info: it.status === "NEW" ? "new" : "permanent", winc: "0" });
    }
    if (req.method === "POST" && url.pathname === "/v1/tx") {
      const entry = { fault, contentType: req.headers["content-type"] };
      log.push(entry);
      if (fault === "hang") return; // never answers
      if (fault === "500") return send(res, 503, { error: "service unavailable" });
      const body = await readBody(req, maxBytes);
      if (body === null || fault === "413") return send(res, 413, { error: "data item too large" });
      if (fault === "402") return send(res, 402, { error: "Insufficient balance" });
      if (req.headers["content-type"] !== "application/octet-stream") return send(res, 400, { error: "want application/octet-stream" });
      const item = new DataItem(body);
      const ok = await DataItem.verify(body);
      Object.assign(entry, { id: ok ? item.id : undefined, size: body.length, verified: ok });
      if (!ok) return send(res, 400, { error: "invalid data item" });
      const id = item.id;
      const owner = crypto.createHash("sha256").update(item.rawOwner).digest("base64url");
      send(res, 200, { id, owner, dataCaches: ["arlocal"], fastFinalityIndexes: [], winc: "0", version: "0.2.0", timestamp: Date.now() });
      if (fault === "drop") return; // acknowledged, never bundled, forgotten
      if (!items.has(id)) {
        items.set(id, { status: "NEW" });
        queue.push({ id, binary: body });
        flushing = flushing.then(flush).catch((e) => console.error("bundler: flush:", e));
      }
      return;
    }
    send(res, 404, { error: "no such route" });
  } catch (e) {
    console.error("bundler:", e);
    if (!res.headersSent) send(res, 500, { error: String(e) });
  }
});
server.listen(port, "127.0.0.1", () => console.log(`listening ${server.address().port}`));
