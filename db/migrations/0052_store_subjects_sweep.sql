-- A visitor source's row (subject 'src:...') counts only its current clock hour (a visitor has no
-- own total), so once its hour is over it is dead weight, and every new network would leave one row
-- per store for good. Each visitor's charge now removes up to two such rows of its store, the
-- oldest first, found through this partial index and taken SKIP LOCKED: a sweep never waits, and
-- never takes a row a writer holds.
CREATE INDEX IF NOT EXISTS "city_store_subjects_visitors_by_hour" ON "city_store_subjects" ("store", "hour_start") WHERE "subject" LIKE 'src:%';
--> statement-breakpoint
-- Migration 0051's charge with the sweep, and a subject's row locked before it is read: a row the
-- sweep removed between the two is made again (dated this hour, so no sweep takes it), and read
-- again under its lock, so no write goes uncounted in its subject's hour.
CREATE OR REPLACE FUNCTION city_store_charge_share(
  p_store text, p_subject text, p_bytes bigint, p_newcomer boolean, p_hour timestamptz, p_home integer,
  p_total bigint, p_per_hour bigint, p_newcomer_per_hour bigint, p_newcomer_total bigint,
  p_subject_hour bigint, p_subject_total bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_hour bigint;
  v_total bigint;
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
  LOOP
    SELECT CASE WHEN hour_start >= p_hour THEN hour_bytes ELSE 0 END, total_bytes INTO v_hour, v_total
      FROM city_store_subjects WHERE store = p_store AND subject = p_subject FOR UPDATE;
    EXIT WHEN FOUND;
    INSERT INTO city_store_subjects (store, subject, hour_start) VALUES (p_store, p_subject, p_hour) ON CONFLICT DO NOTHING;
  END LOOP;
  IF v_hour + p_bytes > p_subject_hour OR v_total + p_bytes > p_subject_total THEN
    RETURN false;
  END IF;
  IF NOT city_store_charge(p_store, p_bytes, p_newcomer, p_hour, p_home, p_total, p_per_hour, p_newcomer_per_hour, p_newcomer_total) THEN
    RETURN false;
  END IF;
  UPDATE city_store_subjects SET hour_bytes = v_hour + p_bytes, hour_start = greatest(hour_start, p_hour), total_bytes = total_bytes + p_bytes
    WHERE store = p_store AND subject = p_subject;
  RETURN true;
END $$;
