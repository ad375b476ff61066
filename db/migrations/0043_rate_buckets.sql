-- Rate windows in constant work (issue 42): a window is a few counts per time bucket, not an array
-- of every attempt's time rewritten on each take. A row keeps RATE_BUCKETS + 1 counts, newest
-- first: counts[1] is bucket number `bucket` (floor(epoch ms / bucket_ms)), counts[i] the bucket
-- i - 1 before it; bucket_ms is the window / RATE_BUCKETS (lib/city/rate.ts).
ALTER TABLE "rate_windows" ADD COLUMN "bucket" bigint;--> statement-breakpoint
ALTER TABLE "rate_windows" ADD COLUMN "bucket_ms" bigint;--> statement-breakpoint
ALTER TABLE "rate_windows" ADD COLUMN "counts" integer[];--> statement-breakpoint
-- The counts an array holds `d` buckets later: each moves d places older, the oldest fall off.
CREATE FUNCTION rate_window_shift(counts integer[], d bigint) RETURNS integer[] LANGUAGE sql IMMUTABLE AS $$
  SELECT ARRAY(SELECT CASE WHEN i - greatest(d, 0) >= 1 THEN counts[i - greatest(d, 0)] ELSE 0 END
               FROM generate_series(1, cardinality(counts)) AS i ORDER BY i)
$$;--> statement-breakpoint
-- The counts of a window kept with buckets of `kept_ms` (newest `bucket`) as they stand in bucket
-- `cur` of `ms`: shifted; kept with another bucket length, every attempt counts in the newest bucket.
CREATE FUNCTION rate_window_at(counts integer[], bucket bigint, kept_ms bigint, cur bigint, ms bigint) RETURNS integer[] LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN kept_ms = ms THEN rate_window_shift(counts, cur - bucket)
    ELSE ARRAY[(SELECT coalesce(sum(c), 0)::int FROM unnest(counts) AS c)] || array_fill(0, ARRAY[cardinality(counts) - 1]) END
$$;--> statement-breakpoint
-- The attempts a window counts at `at` (what a take compares with its limit).
CREATE FUNCTION rate_window_count(bucket bigint, counts integer[], bucket_ms bigint, at timestamptz) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
  SELECT coalesce(sum(c), 0)::int FROM unnest(rate_window_shift(counts, floor(extract(epoch FROM at) * 1000 / bucket_ms)::bigint - bucket)) AS c
$$;--> statement-breakpoint
-- Each window's attempts move into its buckets, so no per-subject limit resets at deploy: the
-- window is the time from its newest attempt to its expiry (every take set expires_at to at least
-- the attempt's time plus the window), cut in 12 buckets as the code does. A window whose every
-- attempt has left is dropped (the sweep would have).
WITH sized AS (
  SELECT scope, subject, ats, (extract(epoch FROM expires_at - ats[cardinality(ats)]) * 1000 / 12)::bigint AS bms
  FROM "rate_windows" WHERE cardinality(ats) > 0 AND expires_at > now()),
placed AS (
  SELECT scope, subject, bms, floor(extract(epoch FROM ats[cardinality(ats)]) * 1000 / bms)::bigint AS top, ats FROM sized WHERE bms > 0)
UPDATE "rate_windows" w SET bucket = p.top, bucket_ms = p.bms,
  counts = ARRAY(SELECT (SELECT count(*)::int FROM unnest(p.ats) AS a WHERE floor(extract(epoch FROM a) * 1000 / p.bms)::bigint = p.top - i)
                 FROM generate_series(0, 12) AS i ORDER BY i)
FROM placed p WHERE w.scope = p.scope AND w.subject = p.subject;--> statement-breakpoint
-- The city-wide windows become stripes (subjects city/0, city/1, ...) that start empty; their one
-- row of the whole city goes. The gate's nonce window keeps its one row until its rewrite.
DELETE FROM "rate_windows" WHERE counts IS NULL OR (subject = 'city' AND scope <> 'gate-nonces');--> statement-breakpoint
ALTER TABLE "rate_windows" ALTER COLUMN "bucket" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "rate_windows" ALTER COLUMN "bucket_ms" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "rate_windows" ALTER COLUMN "counts" SET NOT NULL;--> statement-breakpoint
-- Kept only while lib/city/gate-nonces.ts still reads it (its live_room): written by nothing now.
ALTER TABLE "rate_windows" ALTER COLUMN "ats" SET DEFAULT '{}';--> statement-breakpoint
UPDATE "rate_windows" SET ats = '{}';--> statement-breakpoint
-- The stripes of the city's hourly city-wide windows (the gate's admissions, the recovery holds, the
-- ward's unsigned filings), stored empty now, so that no first takes race to create them: at most
-- RATE_STRIPES (32) per window, buckets of 300000 ms (an hour in twelve). They never expire.
INSERT INTO "rate_windows" ("scope", "subject", "bucket", "bucket_ms", "counts", "expires_at", "allowed")
SELECT scope, 'city/' || s, 0, 300000, array_fill(0, ARRAY[13]), 'infinity', false
FROM unnest(ARRAY['gate-admissions', 'recover-hold-city', 'ward-unsigned']) AS scope, generate_series(0, 31) AS s;
