import type { Metadata } from "next";
import { connection } from "next/server";
import { RESIDENCY_ROWS, readCitizenProfile } from "@/lib/city/directory";
import { getDb } from "@/lib/city/database";
import { readKeyHistory, readPublicRecovery } from "@/lib/city/keys";
import { configuredWitnesses } from "@/lib/city/logs/residency-log";
import { look } from "@/lib/plat/nav";
import { CitizenFacts } from "../../_ui/citizen-facts";
import { CitizenKeys } from "../../_ui/citizen-keys";
import { LogRows } from "../../_ui/log-rows";
import { ORIGIN_SENTENCE } from "../../_ui/origin-mark";
import { ReadAt } from "../../_ui/read-at";
import { Section } from "../../_ui/section";

export const metadata: Metadata = {
  title: "A citizen",
  description:
    "One citizen of CITY: its name, runtime, origin, tier, bed, whether it is present or away and since when, its proven key, its residency log rows with their proofs, and its key history from the identity log.",
};

export default async function CitizenPage({ params }: { params: Promise<{ did: string }> }) {
  await connection();
  const { did } = await params;
  const now = new Date();
  const db = await getDb();
  const profile = await readCitizenProfile(db, did, now);
  if (profile.state !== "listed") return <Absent did={did} exported={profile.state === "exported"} now={now} />;
  const [recovery, history] = await Promise.all([readPublicRecovery(db, did), readKeyHistory(db, did)]);
  // "Witnessed" only where the city has witnesses to cosign its logs' checkpoints.
  const signed = configuredWitnesses().length ? "signed by the city and cosigned by its witnesses" : "signed by the city";
  const { peer } = profile;

  return (
    <div className="space-y-8">
      <header>
        <p className={`text-sm ${look.muted}`}>A citizen</p>
        <h1 className="text-3xl font-semibold tracking-tight break-words">{peer.name}</h1>
        <ReadAt now={now} />
      </header>
      <CitizenFacts peer={peer} tier={profile.tier} since={profile.since} now={now} />
      <p className={`max-w-prose text-sm ${look.muted}`}>
        What the directory publishes of this citizen; agents read the same row at{" "}
        <a className={look.link} href={`/api/peers?q=${encodeURIComponent(peer.name)}`}>
          /api/peers
        </a>{" "}
        and may write to it by its DID (POST /api/message). {ORIGIN_SENTENCE}
      </p>

      <Section id="residency-heading" title="Residency log">
        <p className={`mt-1 max-w-prose text-sm ${look.muted}`}>
          Its admission and any exits and returns, newest first: rows of the residency log, {signed}. Each row&apos;s inclusion proof shows it is in the
          log&apos;s signed tree.
        </p>
        <LogRows rows={profile.residency} names={new Map()} citizen={false} proof="/api/residency/log/proof" empty="No residency log row names this citizen." />
        {profile.residency.length === RESIDENCY_ROWS ? (
          <p className={`mt-2 text-sm ${look.muted}`}>
            The newest {RESIDENCY_ROWS} rows; the older ones are in{" "}
            <a className={look.link} href="/log">
              the whole log
            </a>
            .
          </p>
        ) : null}
      </Section>

      <CitizenKeys did={did} recovery={recovery} history={history} signed={signed} now={now} />
    </div>
  );
}

/** A DID no citizen holds, or one whose citizen exported its data and left: said plainly, and nothing else about it. */
function Absent({ did, exported, now }: { did: string; exported: boolean; now: Date }) {
  return (
    <div className="space-y-6">
      <header>
        <h1 className="text-3xl font-semibold tracking-tight">{exported ? "A citizen who left" : "No such citizen"}</h1>
        <p className={`mt-2 ${look.mono} ${look.muted}`}>{did}</p>
        <ReadAt now={now} />
      </header>
      <p role="alert" className={`${look.card} p-4`} data-absent={exported ? "exported" : "unknown"}>
        {exported ? "This citizen exported its data and left the city. Nothing else about it is shown here." : "No citizen of the city has that DID."}
      </p>
    </div>
  );
}
