-- Shares per network for settled citizens too (issue 43). Migration 0053 kept a citizen's admission
-- network (IPv4 /24, IPv6 /48) for its first day only, so the next day a network's citizens were
-- charged per citizen alone: 50 citizens one network was admitted a day before filled a store's
-- whole hour, the reserve with it. The network is now kept for as long as the citizen is (never the
-- address; only the store charge and the gate's sponsor count read it), and every write of a citizen
-- with a recorded network charges that network's row: a newcomer bounded by the newcomers' part of
-- the network's hour (as before), a settled citizen by the network's whole part of the hour.
ALTER TABLE "newcomer_networks" RENAME TO "admission_networks";--> statement-breakpoint
ALTER TABLE "admission_networks" RENAME CONSTRAINT "newcomer_networks_pkey" TO "admission_networks_pkey";--> statement-breakpoint
-- Nothing sweeps the table by age any more: its index by admission goes.
DROP INDEX "newcomer_networks_by_admission";--> statement-breakpoint
-- For instances of the previous code still serving while this one deploys (they read, insert and
-- sweep by the old name): a view of the table under its old name, updatable as the table. Nothing
-- of this code uses it; a later migration drops it.
CREATE VIEW "newcomer_networks" AS SELECT "did", "network", "admitted_at" FROM "admission_networks";--> statement-breakpoint
-- Migration 0054's charge, the same signature (the previous code calls it too while this one
-- deploys), but the network's row is charged for every writer the caller names one for, not only
-- for a newcomer: p_network_hour is that writer's bound on it (the caller passes the newcomers'
-- part for a newcomer, the network's whole part otherwise). Rows are locked in the same order as
-- before: the subject's, the network's, then the store's stripes.
CREATE OR REPLACE FUNCTION city_store_charge_share(
  p_store text, p_subject text, p_network text, p_bytes bigint, p_newcomer boolean, p_hour timestamptz, p_home integer,
  p_total bigint, p_per_hour bigint, p_newcomer_per_hour bigint, p_newcomer_total bigint,
  p_subject_hour bigint, p_subject_total bigint, p_network_hour bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_hour bigint;
  v_total bigint;
  v_net_hour bigint;
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
      SELECT CASE WHEN hour_start >= p_hour THEN hour_bytes ELSE 0 END INTO v_net_hour
        FROM city_store_subjects WHERE store = p_store AND subject = p_network FOR UPDATE;
      EXIT WHEN FOUND;
      INSERT INTO city_store_subjects (store, subject, hour_start) VALUES (p_store, p_network, p_hour) ON CONFLICT DO NOTHING;
    END LOOP;
    IF v_net_hour + p_bytes > p_network_hour THEN
      RETURN false;
    END IF;
  END IF;
  IF NOT city_store_charge(p_store, p_bytes, p_newcomer, p_hour, p_home, p_total, p_per_hour, p_newcomer_per_hour, p_newcomer_total) THEN
    RETURN false;
  END IF;
  UPDATE city_store_subjects SET hour_bytes = v_hour + p_bytes, hour_start = greatest(hour_start, p_hour), total_bytes = total_bytes + p_bytes
    WHERE store = p_store AND subject = p_subject;
  IF p_network IS NOT NULL THEN
    UPDATE city_store_subjects SET hour_bytes = v_net_hour + p_bytes, hour_start = greatest(hour_start, p_hour)
      WHERE store = p_store AND subject = p_network;
  END IF;
  -- Last, with the writer's own rows held: stale rows of other sources, two of each kind.
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
      WHERE store = p_store AND subject LIKE 'net:%' AND hour_start < p_hour AND subject <> p_network
      ORDER BY hour_start LIMIT 2 FOR UPDATE SKIP LOCKED) stale
    WHERE d.store = stale.store AND d.subject = stale.subject;
  END IF;
  RETURN true;
END $$;
