-- The stripe a transaction moves (census counts, version counters, counted subjects: migrations 0047
-- and 0056) was its backend's, pg_backend_pid() % 16. A server's pool holds the same connections for
-- hours, so two of them on one stripe (by chance: of 10 connections, two share a stripe more often
-- than not) waited for each other's commit on every write, for good: under 32 admissions in flight,
-- an admission's first statement waited on another admission's whole transaction (seen in
-- pg_stat_activity: Lock/transactionid on the counted subjects' stripe, 10 to 28 % of the active
-- backends). Now a transaction takes a stripe no other transaction holds: its first call tries
-- the 16 stripes' advisory locks (two-key space, class 17225, held to the transaction's end; no
-- other lock of the city is in that space), starting at its transaction id's stripe so that
-- transactions begun one after another start apart, and keeps the one it got for the rest of the
-- transaction (a transaction-local setting), so it still moves one stripe only, the same in every
-- table. Only when all 16 are held (more than 16 writers at once) does it wait, for the lock of its
-- first stripe, before it touches any stripe's row: a stripe's rows are only ever moved by the one
-- transaction holding its lock, so two writers never hold one stripe's rows in two tables each.
CREATE OR REPLACE FUNCTION city_stripe() RETURNS smallint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  kept text := current_setting('city.stripe', true);
  first integer;
  s smallint;
BEGIN
  IF kept IS NOT NULL AND kept <> '' THEN
    RETURN kept::smallint;
  END IF;
  first := (txid_current() % 16)::integer;
  FOR i IN 0..15 LOOP
    s := ((first + i) % 16)::smallint;
    IF pg_try_advisory_xact_lock(17225, s) THEN
      PERFORM set_config('city.stripe', s::text, true);
      RETURN s;
    END IF;
  END LOOP;
  s := first::smallint;
  PERFORM pg_advisory_xact_lock(17225, s);
  PERFORM set_config('city.stripe', s::text, true);
  RETURN s;
END $$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION counted_subjects_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE counted_subjects SET n = n + CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END WHERE stripe = city_stripe();
  RETURN NULL;
END $$;
