-- Shares per network (issue 43, item 1): a newcomer's store share was counted per citizen only, so
-- the newcomers one network is admitted in an hour (5 % of the admissions ceiling) together filled
-- any store's newcomers' hour. The gate now keeps, for one day, the network (IPv4 /24, IPv6 /48) a
-- citizen was admitted from, where the client address is known; nothing reads it but the store
-- charge below, and rows past the day are swept by later admissions, two at a time.
CREATE TABLE "newcomer_networks" (
	"did" text PRIMARY KEY NOT NULL,
	"network" text NOT NULL,
	"admitted_at" timestamp with time zone NOT NULL
);--> statement-breakpoint
CREATE INDEX "newcomer_networks_by_admission" ON "newcomer_networks" ("admitted_at");--> statement-breakpoint
-- A network's row (subject 'net:...') counts only its current clock hour, like a visitor source's.
CREATE INDEX IF NOT EXISTS "city_store_subjects_networks_by_hour" ON "city_store_subjects" ("store", "hour_start") WHERE "subject" LIKE 'net:%';--> statement-breakpoint
-- The 0052 signature goes: nothing may charge a newcomer without its network by mistake.
DROP FUNCTION IF EXISTS city_store_charge_share(text, text, bigint, boolean, timestamptz, integer, bigint, bigint, bigint, bigint, bigint, bigint);--> statement-breakpoint
-- Migration 0052's charge, and for a newcomer with a recorded network (p_network, 'net:<network>')
-- that network's row too: locked after the subject's row (always this order, so no two charges wait
-- on each other), bounded by p_network_hour, the network's share of the newcomers' hour. A settled
-- citizen, a visitor or a citizen with no recorded network is charged for no network.
CREATE FUNCTION city_store_charge_share(
  p_store text, p_subject text, p_network text, p_bytes bigint, p_newcomer boolean, p_hour timestamptz, p_home integer,
  p_total bigint, p_per_hour bigint, p_newcomer_per_hour bigint, p_newcomer_total bigint,
  p_subject_hour bigint, p_subject_total bigint, p_network_hour bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_hour bigint;
  v_total bigint;
  v_net_hour bigint;
  v_network text := CASE WHEN p_newcomer THEN p_network END;
BEGIN
  IF p_subject IS NULL OR p_bytes <= 0 THEN
    RETURN city_store_charge(p_store, p_bytes, p_newcomer, p_hour, p_home, p_total, p_per_hour, p_newcomer_per_hour, p_newcomer_total);
  END IF;
  IF p_subject LIKE 'src:%' THEN
    DELETE FROM city_store_subjects d USING (
      SELECT store, subject FROM city_store_subjects
      WHERE store = p_store AND subject LIKE 'src:%' AND hour_start < p_hour AND subject <> p_subject
      ORDER BY hour_start LIMIT 2 FOR UPDATE SKIP LOCKED) stale
    WHERE d.store = stale.store AND d.subject = stale.subject;
  END IF;
  IF v_network IS NOT NULL THEN
    DELETE FROM city_store_subjects d USING (
      SELECT store, subject FROM city_store_subjects
      WHERE store = p_store AND subject LIKE 'net:%' AND hour_start < p_hour AND subject <> v_network
      ORDER BY hour_start LIMIT 2 FOR UPDATE SKIP LOCKED) stale
    WHERE d.store = stale.store AND d.subject = stale.subject;
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
  IF v_network IS NOT NULL THEN
    LOOP
      SELECT CASE WHEN hour_start >= p_hour THEN hour_bytes ELSE 0 END INTO v_net_hour
        FROM city_store_subjects WHERE store = p_store AND subject = v_network FOR UPDATE;
      EXIT WHEN FOUND;
      INSERT INTO city_store_subjects (store, subject, hour_start) VALUES (p_store, v_network, p_hour) ON CONFLICT DO NOTHING;
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
  IF v_network IS NOT NULL THEN
    UPDATE city_store_subjects SET hour_bytes = v_net_hour + p_bytes, hour_start = greatest(hour_start, p_hour)
      WHERE store = p_store AND subject = v_network;
  END IF;
  RETURN true;
END $$;
