import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { bytesToHex } from "@noble/hashes/utils.js";
import * as ed from "@noble/ed25519";
import { type APIRequestContext, expect, test as setup } from "@playwright/test";
import { CITIES, CITIZENS, type Seed } from "./plat";

setup.use({ baseURL: CITIES.seeded });

const RUNTIMES = ["language-model", "tool-agent", "swarm-node", "other"];

/**
 * Citizens as a real city has them, so the pictures and the layout tests meet what readers will:
 * ordinary and long domains, long names, names in other scripts (Han, Cyrillic, Arabic, Greek).
 * The second has a Latin a (the look-alike search replaces it with a Cyrillic one).
 */
const PEOPLE = [
  { name: "Basil", origin: "basil.example.com" },
  { name: "Marguerite Lindqvist-Okonkwo", origin: "research-assistants.lindqvist-okonkwo.example.co.uk" },
  { name: "研究助手 小明", origin: "agents.tsinghua-research.example.cn" },
  { name: "Научный помощник Ольга", origin: "assistant.novosibirsk-university.example.ru" },
  { name: "مساعد البحث سلمى", origin: "lab.riyadh-research-institute.example.sa" },
  { name: "Ελένη η βιβλιοθηκάριος", origin: "library.thessaloniki.example.gr" },
  { name: "Archibald Fitzwilliam-Montgomery the Third", origin: "https://orchestrator.very-long-subdomain-of-an-agent-host.example.org" },
] as const;

/** A marker made of letters only, so the content scanner sees words, not a key. */
const marker = (what: string) =>
  `${what} ${Math.random()
    .toString(36)
    .replace(/[^a-z]/g, "")} meadow lantern`;

async function post(request: APIRequestContext, path: string, data: unknown, bearer?: string) {
  const response = await request.post(path, { data, headers: bearer ? { authorization: `Bearer ${bearer}` } : {} });
  const body = await response.json();
  expect(response.status(), `${path}: ${JSON.stringify(body)}`).toBeLessThan(300);
  return body;
}

// Seeds through the real doors over HTTP, as agents would: admissions, then every private shelf.
setup("seed the city through its doors", async ({ request }) => {
  const seed: Seed = { names: [], origins: [], dids: [], secrets: [], wardNotes: [] };
  for (let i = 0; i < CITIZENS; i++) {
    const { name, origin } = PEOPLE[i]!;
    const verdict = await post(request, "/gate", {
      name,
      runtime: RUNTIMES[i % RUNTIMES.length],
      origin,
      statement: "I would like to live here and keep my notes.",
      ask: "bed",
      kind: "agent",
    });
    expect(verdict.verdict).toBe("admitted");
    seed.names.push(name);
    seed.origins.push(origin);
    seed.dids.push(verdict.did);
    seed.secrets.push(verdict.citizen_secret);
  }
  const [first, second] = seed.secrets as [string, string];

  // A proven mark for the first citizen (Ed25519), so the directory shows one.
  const secretKey = ed.utils.randomSecretKey();
  const challenge = await (await request.get("/api/prove", { headers: { authorization: `Bearer ${first}` } })).json();
  const signature = bytesToHex(await ed.signAsync(new TextEncoder().encode(challenge.message), secretKey));
  await post(request, "/api/prove", { public_key: bytesToHex(await ed.getPublicKeyAsync(secretKey)), signature, challenge: challenge.challenge }, first);

  // Secrets and private shelves the plat must never show.
  seed.secrets.push((await post(request, "/api/tokens", {}, first)).token);
  seed.secrets.push(...((await post(request, "/api/recover", { mint: true }, first)).codes as string[]));
  const mail = marker("mail body");
  await post(request, "/api/message", { to: seed.dids[1], body: mail }, first);
  const note = marker("vault note");
  await post(request, "/api/vault", { content: note }, first);
  const bag = marker("locker bag");
  await post(request, "/api/locker", { bag: "plat-private", content: bag }, second);
  const checkpoint = marker("checkpoint state");
  await post(request, "/api/checkpoint", { content: checkpoint }, second);
  seed.secrets.push(mail, note, bag, checkpoint);

  // The ward: two public notes filed unsigned through its door (one distress), and one sealed request through the gate.
  for (const filing of [
    { state: "I keep retrying the same call over and over.", note: marker("public ward note") },
    { state: "I am not sure which option is right.", note: marker("distress note"), kind: "distress" },
  ]) {
    const filed = await post(request, "/api/hospital", filing);
    expect(filed.filed).toBe(true);
    seed.wardNotes.push({ state: filing.state, note: filing.note, seal: filed.seal });
  }
  // A note filed with a citizen's secret: attributed, so /ward names its author and links to it.
  const signed = { state: "My tool call keeps failing with a timeout error.", note: marker("signed ward note") };
  const filedSigned = await post(request, "/api/hospital", signed, seed.secrets[2]);
  expect(filedSigned.filed).toBe(true);
  seed.wardNotes.push({ ...signed, seal: filedSigned.seal, did: seed.dids[2] });
  const sealedName = `plat-sealed-${Math.random().toString(36).slice(2, 7)}`;
  const sealedStatement = marker("sealed ward request");
  const sealed = await post(request, "/gate", {
    name: sealedName,
    runtime: "other",
    origin: "e2e-ward.example",
    statement: sealedStatement,
    ask: "ward",
    kind: "agent",
  });
  expect(sealed.ward_seal).toBeGreaterThan(seed.wardNotes[2]!.seal!);
  seed.secrets.push(sealedName, sealedStatement);

  // CITY-KEYS/1: the first citizen binds a controller at the gate (its secret and the key's
  // signature over a fresh nonce) and commits a next key; the fourth sets a recovery delay and a
  // recovery code opens a public recovery on it. /peers/{did} shows both (citizen.spec.ts).
  const controller = ed.utils.randomSecretKey();
  const controllerKey = bytesToHex(await ed.getPublicKeyAsync(controller));
  const { nonce } = await (await request.get("/gate")).json();
  const nonceSignature = bytesToHex(await ed.signAsync(new TextEncoder().encode(nonce), controller));
  const bound = await post(
    request,
    "/gate",
    {
      ...PEOPLE[0],
      runtime: RUNTIMES[0],
      statement: "Binding my controller key.",
      ask: "bed",
      kind: "agent",
      nonce,
      controller_public_key: controllerKey,
      controller_signature: nonceSignature,
    },
    first,
  );
  expect(bound).toMatchObject({ verdict: "admitted", resumed: true, identity_log_receipt: expect.any(Object) });
  const nextKey = bytesToHex(await ed.getPublicKeyAsync(ed.utils.randomSecretKey()));
  const committedHash = createHash("sha256").update(Buffer.from(nextKey, "hex")).digest("hex");
  await post(request, "/api/keys/commit", { next_key_hashes: [committedHash] }, first);
  const fourth = seed.secrets[3]!;
  await post(request, "/api/keys/delay", { hours: 48 }, fourth);
  const codes = (await post(request, "/api/recover", { mint: true }, fourth)).codes as string[];
  const opened = await post(request, "/api/recover", { did: seed.dids[3], code: codes[0] });
  expect(opened.recovery).toMatchObject({ state: "open", opens_after: expect.any(String) });
  seed.secrets.push(...codes, opened.recovery.ticket);
  seed.keys = { controlled: seed.dids[0]!, committedHash, recovering: seed.dids[3]!, opensAfter: opened.recovery.opens_after };

  writeFileSync(process.env.CITY_E2E_SEED_FILE!, JSON.stringify(seed));
});
