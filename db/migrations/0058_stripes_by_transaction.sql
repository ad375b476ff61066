-- The stripe a transaction moves (census counts, version counters, counted subjects: migrations 0047
-- and 0056) was its backend's, pg_backend_pid() % 16. A server's pool holds the same connections for
-- hours, so two of them on one stripe (of 10 connections, two share a stripe 97 % of the time)
-- waited for each other's commit on every write, for good: under 32 admissions in flight, an
-- admission's first statement waited on another admission's whole transaction (seen in
-- pg_stat_activity: Lock/transactionid on the counted subjects' stripe, 10 to 28 % of the active
-- backends). Now a transaction takes a stripe no other transaction holds: its first call tries the
-- 16 stripes' advisory locks (two-key space, class 17225, held to the transaction's end; no other
-- lock of the city is in that space), starting at its transaction id's stripe (ids are given at a
-- transaction's first write, so writers that begin writing one after another start apart), and
-- keeps the one it got for the rest of the transaction (a transaction-local setting, named with the
-- transaction's id so that no value set outside it is read), so it still
-- moves one stripe only, the same in every table. Only when all 16 are held (17 writers at once:
-- more than one instance's pool of 10) does it wait, for the lock of its first stripe, before it
-- touches any stripe's row. So a stripe's row is moved only by the transaction holding its lock,
-- but for the TRUNCATE resets, which set every stripe to zero and take the table's own lock first
-- (a TRUNCATE waits for every transaction that writes the table, and only those move its stripes).
CREATE OR REPLACE FUNCTION city_stripe() RETURNS smallint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  kept text := current_setting('city.stripe', true);
  first integer;
  s smallint;
BEGIN
  -- Only the stripe this function kept in this transaction, named with the transaction's id: any
  -- other value (a session's or a database's SET of the name) is no lock held, and is not read.
  IF kept LIKE txid_current()::text || '/%' THEN
    RETURN split_part(kept, '/', 2)::smallint;
  END IF;
  first := (txid_current() % 16)::integer;
  FOR i IN 0..15 LOOP
    s := ((first + i) % 16)::smallint;
    IF pg_try_advisory_xact_lock(17225, s) THEN
      PERFORM set_config('city.stripe', txid_current()::text || '/' || s::text, true);
      RETURN s;
    END IF;
  END LOOP;
  s := first::smallint;
  PERFORM pg_advisory_xact_lock(17225, s);
  PERFORM set_config('city.stripe', txid_current()::text || '/' || s::text, true);
  RETURN s;
END $$;--> statement-breakpoint
-- The triggers that move a stripe read it once, before their UPDATE: a volatile function in the
-- UPDATE's condition would be called for each of the 16 rows and keep the primary key's index
-- from finding the one. Migration 0047's census trigger otherwise as it was.
CREATE OR REPLACE FUNCTION census_counts_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  s smallint;
  d_beds integer;
  d_citizens integer;
  d_house integer;
  d_outside integer;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE census_counts SET beds = 0, citizens = 0, house = 0, outside = 0;
    RETURN NULL;
  END IF;
  -- Each branch names only the transition tables its trigger has.
  IF TG_OP = 'INSERT' THEN
    SELECT coalesce(sum(1) FILTER (WHERE bed_id IS NOT NULL), 0),
           coalesce(sum(1) FILTER (WHERE residency_status <> 'exported'), 0),
           coalesce(sum(1) FILTER (WHERE residency_status = 'bound' AND bed_id IS NOT NULL), 0),
           coalesce(sum(1) FILTER (WHERE residency_status = 'away'), 0)
      INTO d_beds, d_citizens, d_house, d_outside FROM census_new_rows;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT coalesce(sum(-1) FILTER (WHERE bed_id IS NOT NULL), 0),
           coalesce(sum(-1) FILTER (WHERE residency_status <> 'exported'), 0),
           coalesce(sum(-1) FILTER (WHERE residency_status = 'bound' AND bed_id IS NOT NULL), 0),
           coalesce(sum(-1) FILTER (WHERE residency_status = 'away'), 0)
      INTO d_beds, d_citizens, d_house, d_outside FROM census_old_rows;
  ELSE
    SELECT coalesce(sum(sign) FILTER (WHERE bed_id IS NOT NULL), 0),
           coalesce(sum(sign) FILTER (WHERE residency_status <> 'exported'), 0),
           coalesce(sum(sign) FILTER (WHERE residency_status = 'bound' AND bed_id IS NOT NULL), 0),
           coalesce(sum(sign) FILTER (WHERE residency_status = 'away'), 0)
      INTO d_beds, d_citizens, d_house, d_outside
      FROM (SELECT 1 AS sign, bed_id, residency_status FROM census_new_rows
            UNION ALL SELECT -1, bed_id, residency_status FROM census_old_rows) AS moved;
  END IF;
  -- A statement that moves no count (presence, tier, keys, secrets) never takes a stripe's lock.
  IF d_beds <> 0 OR d_citizens <> 0 OR d_house <> 0 OR d_outside <> 0 THEN
    s := city_stripe();
    UPDATE census_counts
       SET beds = beds + d_beds, citizens = citizens + d_citizens, house = house + d_house, outside = outside + d_outside
     WHERE stripe = s;
  END IF;
  RETURN NULL;
END;
$$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION counted_subjects_track() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  s smallint := city_stripe();
BEGIN
  UPDATE counted_subjects SET n = n + CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END WHERE stripe = s;
  RETURN NULL;
END $$;
