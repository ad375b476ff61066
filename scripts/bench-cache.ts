/**
 * The shared-cache leg: nginx (Debian's package) with proxy_cache in front of `next start`, run as
 * our own process with a generated configuration in a temporary folder on a free port. It measures
 * the public readings through the cache against the static file through the same cache (nginx keeps
 * the static file a minute whatever its headers, so it is the cache's own ceiling), checks that a
 * write shows through the cache within the s-maxage + stale-while-revalidate the readings declare,
 * and that a citizen's answer is never served from the cache.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { admitCitizens, type Citizen } from "./bench-citizens";
import { freePort } from "./free-port";

const PUBLIC_READS = ["/city.json", "/beacon.json", "/api/peers", "/api/plaza", "/api/hospital", "/api/residency/log?after=0&limit=10"];

export function nginxAvailable(): boolean {
  return spawnSync("nginx", ["-v"]).status === 0;
}

export async function runCacheLeg(options: { base: string; seconds: number; connections: number; citizens: Citizen[] }) {
  const lines: string[] = [];
  let failures = 0;
  if (!nginxAvailable()) return { lines: ["nginx is not installed (apt-get install -y nginx): leg skipped"], failures: 1 };
  const nginx = await startNginx(options.base);
  try {
    const rates: Record<string, number> = {};
    for (const p of ["/robots.txt", ...PUBLIC_READS]) {
      for (let i = 0; i < 3; i++) await (await fetch(nginx.base + p)).arrayBuffer();
      const result = await autocannon({ url: nginx.base + p, connections: options.connections, duration: options.seconds });
      rates[p] = result.requests.average;
      const ratio = result.requests.average / rates["/robots.txt"]!;
      const probe = await fetch(nginx.base + p);
      await probe.arrayBuffer();
      lines.push(
        `${p}: ${result.requests.average.toFixed(0)} req/s through nginx (${ratio.toFixed(2)} of the static file), p99 ${result.latency.p99} ms, cache ${probe.headers.get("x-cache-status")}, non-2xx ${result.non2xx}`,
      );
      if (p !== "/robots.txt" && ratio < 0.8) lines.push(`  below 0.8 of the static file`);
      failures += result["5xx"] + result.errors;
    }

    // A write shows through the cache within the seconds the reading declares.
    const declared = await fetch(nginx.base + "/api/plaza");
    await declared.arrayBuffer();
    const control = declared.headers.get("cache-control") ?? "";
    const bound = Number(/s-maxage=(\d+)/.exec(control)?.[1] ?? 0) + Number(/stale-while-revalidate=(\d+)/.exec(control)?.[1] ?? 0);
    const mark = `cache-leg-${process.pid}-${Date.now()}`;
    // A citizen of its own: the bench's citizens may have used up their plaza hour already, and a
    // parked post (202) is never shown.
    const writer = (await admitCitizens(options.base, 1, "cache-writer"))[0]!;
    const wrote = await fetch(options.base + "/api/plaza", {
      method: "POST",
      headers: { authorization: `Bearer ${writer.secret}`, "content-type": "application/json" },
      body: JSON.stringify({ body: mark }),
    });
    await wrote.arrayBuffer();
    const written = Date.now();
    let seenAfter = -1;
    while (Date.now() - written < (bound + 5) * 1000) {
      const page = await (await fetch(nginx.base + "/api/plaza")).text();
      if (page.includes(mark)) {
        seenAfter = (Date.now() - written) / 1000;
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const fresh = wrote.status === 200 && seenAfter >= 0 && seenAfter <= bound;
    lines.push(
      `a plaza post (${wrote.status}) visible through the cache after ${seenAfter.toFixed(1)} s; declared bound ${bound} s (${control}): ${fresh ? "holds" : "FAILS"}`,
    );
    if (!fresh) failures += 1;

    // A citizen's door is never served from the cache, and each citizen gets its own answer.
    const statuses: string[] = [];
    let foreign = 0;
    for (let round = 0; round < 3; round++) {
      for (const citizen of options.citizens.slice(0, 4)) {
        const answer = await fetch(nginx.base + "/api/message", { headers: { authorization: `Bearer ${citizen.secret}` } });
        const text = await answer.text();
        statuses.push(answer.headers.get("x-cache-status") ?? "none");
        for (const other of options.citizens.slice(0, 4)) if (other !== citizen && text.includes(`"to":"${other.did}"`)) foreign += 1;
      }
    }
    const served = statuses.filter((s) => s === "HIT" || s === "STALE" || s === "UPDATING" || s === "REVALIDATED").length;
    lines.push(
      `GET /api/message as 4 citizens, 3 rounds: cache statuses ${[...new Set(statuses)].join(",")}; served from the cache ${served}, another citizen's mail ${foreign}`,
    );
    if (served > 0 || foreign > 0) failures += 1;
  } finally {
    await nginx.stop();
  }
  return { lines, failures };
}

async function startNginx(upstream: string): Promise<{ base: string; stop: () => Promise<void> }> {
  const dir = mkdtempSync(path.join(tmpdir(), "city-nginx-"));
  const port = await freePort();
  const conf = path.join(dir, "nginx.conf");
  const root = process.getuid?.() === 0 ? "user root;\n" : "";
  writeFileSync(
    conf,
    `${root}worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 2048; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  proxy_cache_path ${dir}/cache levels=1:2 keys_zone=city:10m max_size=200m inactive=10m use_temp_path=off;
  upstream city { server ${new URL(upstream).host}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_set_header Host $http_host;
    proxy_cache city;
    proxy_cache_lock on;
    proxy_cache_revalidate on;
    proxy_cache_background_update on;
    proxy_cache_use_stale updating error timeout;
    add_header X-Cache-Status $upstream_cache_status always;
    # The static file is kept a minute whatever it says: the cache's own ceiling to compare with.
    location = /robots.txt { proxy_ignore_headers Cache-Control Expires; proxy_cache_valid 200 60s; proxy_pass http://city; }
    # Everything else is kept exactly as its Cache-Control allows.
    location / { proxy_pass http://city; }
  }
}
`,
  );
  const child: ChildProcess = spawn("nginx", ["-p", dir, "-c", conf], { stdio: ["ignore", "ignore", "inherit"] });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    try {
      const answer = await fetch(`${base}/robots.txt`);
      await answer.arrayBuffer();
      if (answer.ok) break;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
    if (i === 99) throw new Error("nginx did not start");
  }
  return {
    base,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGQUIT");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
