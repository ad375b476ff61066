-- Rate windows at a fraction of the CPU (issue 42, CPU per request). The functions of migration 0043
-- each held a sub-SELECT (ARRAY(SELECT ... FROM generate_series ... ORDER BY), a sum over unnest),
-- so PostgreSQL could not inline them: every call ran a small query of its own, about 100 per
-- admission (the ceiling's 32 stripes are read several times). Now each is one expression, which
-- the planner puts in place. Same results for every input: a shift of d buckets puts min(d, n)
-- zeros in front of the first n - d counts (none for d <= 0); another bucket length sums them all
-- into the newest (rate_window_total, a sub-SELECT of its own, called only in that rare case).
CREATE OR REPLACE FUNCTION rate_window_total(counts integer[]) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
  SELECT coalesce(sum(c), 0)::int FROM unnest(counts) AS c
$$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION rate_window_shift(counts integer[], d bigint) RETURNS integer[] LANGUAGE sql IMMUTABLE AS $$
  SELECT array_fill(0, ARRAY[least(greatest(d, 0), cardinality(counts))::int])
    || counts[1 : cardinality(counts) - least(greatest(d, 0), cardinality(counts))::int]
$$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION rate_window_at(counts integer[], bucket bigint, kept_ms bigint, cur bigint, ms bigint) RETURNS integer[] LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN kept_ms = ms THEN rate_window_shift(counts, cur - bucket)
    ELSE ARRAY[rate_window_total(counts)] || array_fill(0, ARRAY[cardinality(counts) - 1]) END
$$;
