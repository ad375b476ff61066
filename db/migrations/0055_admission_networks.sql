-- Shares per network for settled citizens too (issue 43). Migration 0053 kept a citizen's admission
-- network (IPv4 /24, IPv6 /48) for its first day only, so the next day a network's citizens were
-- charged per citizen alone: 50 citizens one network was admitted a day before filled a store's
-- whole hour, the reserve with it. The network is now kept for as long as the citizen is (never the
-- address; only the store charge reads it), and every write of a citizen with a recorded network
-- charges that network's row: newcomers bounded by their part of the newcomers' hour (as before),
-- settled citizens by the network's part of the whole hour; in a store with per-citizen totals
-- (append-only), the network's citizens together also hold at most the network's part of the total.
ALTER TABLE "newcomer_networks" RENAME TO "admission_networks";--> statement-breakpoint
-- Nothing sweeps the table by age any more: its index by admission goes.
DROP INDEX "newcomer_networks_by_admission";--> statement-breakpoint
ALTER TABLE "admission_networks" RENAME CONSTRAINT "newcomer_networks_pkey" TO "admission_networks_pkey";--> statement-breakpoint
-- The charge sweeps only networks' rows that hold no total (stale hours of stores without totals):
-- its index keeps only those, so the sweep never walks the rows kept for good.
DROP INDEX IF EXISTS "city_store_subjects_networks_by_hour";--> statement-breakpoint
CREATE INDEX "city_store_subjects_networks_by_hour" ON "city_store_subjects" ("store", "hour_start") WHERE "subject" LIKE 'net:%' AND "total_bytes" = 0;--> statement-breakpoint
DROP FUNCTION IF EXISTS city_store_charge_share(text, text, text, bigint, boolean, timestamptz, integer, bigint, bigint, bigint, bigint, bigint, bigint, bigint);--> statement-breakpoint
-- Migration 0054's charge, but the network's row is charged for every writer that has one:
-- p_network_hour is the writer's bound on it (the caller passes the newcomers' part for a newcomer,
-- the settled part otherwise), and p_network_total, where not null, bounds the network's total
-- (counted on the row's total_bytes; a row holding a total is never swept). Rows are locked in the
-- same order as before: the subject's, the network's, then the store's stripes.
CREATE FUNCTION city_store_charge_share(
  p_store text, p_subject text, p_network text, p_bytes bigint, p_newcomer boolean, p_hour timestamptz, p_home integer,
  p_total bigint, p_per_hour bigint, p_newcomer_per_hour bigint, p_newcomer_total bigint,
  p_subject_hour bigint, p_subject_total bigint, p_network_hour bigint, p_network_total bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_hour bigint;
  v_total bigint;
  v_net_hour bigint;
  v_net_total bigint;
BEGIN
  IF p_subject IS NULL OR p_bytes <= 0 THEN
    RETURN city_store_charge(p_store, p_bytes, p_newcomer, p_hour, p_home, p_total, p_per_hour, p_newcomer_per_hour, p_newcomer_total);
  END IF;
  LOOP
    SELECT CASE WHEN hour_start >= p_hour THEN hour_bytes ELSE 0 END, total_bytes INTO v_hour, v_total
      FROM city_store_subjects WHERE store = p_store AND subject = p_subject FOR UPDATE;
    EXIT WHEN FOUND;
    INSERT INTO city_store_subjects (store, subject, hour_start) VALUES (p_store, p_subject, p_hour) ON CONFLICT DO NOTHING;
  END LOOP;
  IF v_hour + p_bytes > p_subject_hour OR v_total + p_bytes > p_subject_total THEN
    RETURN false;
  END IF;
  IF p_network IS NOT NULL THEN
    LOOP
      SELECT CASE WHEN hour_start >= p_hour THEN hour_bytes ELSE 0 END, total_bytes INTO v_net_hour, v_net_total
        FROM city_store_subjects WHERE store = p_store AND subject = p_network FOR UPDATE;
      EXIT WHEN FOUND;
      INSERT INTO city_store_subjects (store, subject, hour_start) VALUES (p_store, p_network, p_hour) ON CONFLICT DO NOTHING;
    END LOOP;
    IF v_net_hour + p_bytes > p_network_hour OR (p_network_total IS NOT NULL AND v_net_total + p_bytes > p_network_total) THEN
      RETURN false;
    END IF;
  END IF;
  IF NOT city_store_charge(p_store, p_bytes, p_newcomer, p_hour, p_home, p_total, p_per_hour, p_newcomer_per_hour, p_newcomer_total) THEN
    RETURN false;
  END IF;
  UPDATE city_store_subjects SET hour_bytes = v_hour + p_bytes, hour_start = greatest(hour_start, p_hour), total_bytes = total_bytes + p_bytes
    WHERE store = p_store AND subject = p_subject;
  IF p_network IS NOT NULL THEN
    UPDATE city_store_subjects SET hour_bytes = v_net_hour + p_bytes, hour_start = greatest(hour_start, p_hour),
      total_bytes = total_bytes + CASE WHEN p_network_total IS NULL THEN 0 ELSE p_bytes END
      WHERE store = p_store AND subject = p_network;
  END IF;
  -- Last, with the writer's own rows held: stale rows of other sources, two of each kind (a
  -- network's row that holds a total is its record for good, never stale).
  IF p_subject LIKE 'src:%' THEN
    DELETE FROM city_store_subjects d USING (
      SELECT store, subject FROM city_store_subjects
      WHERE store = p_store AND subject LIKE 'src:%' AND hour_start < p_hour AND subject <> p_subject
      ORDER BY hour_start LIMIT 2 FOR UPDATE SKIP LOCKED) stale
    WHERE d.store = stale.store AND d.subject = stale.subject;
  END IF;
  IF p_network IS NOT NULL THEN
    DELETE FROM city_store_subjects d USING (
      SELECT store, subject FROM city_store_subjects
      WHERE store = p_store AND subject LIKE 'net:%' AND hour_start < p_hour AND total_bytes = 0 AND subject <> p_network
      ORDER BY hour_start LIMIT 2 FOR UPDATE SKIP LOCKED) stale
    WHERE d.store = stale.store AND d.subject = stale.subject;
  END IF;
  RETURN true;
END $$;
