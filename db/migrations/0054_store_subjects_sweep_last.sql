-- The store charge's sweeps of other subjects' stale rows (visitors' 'src:' rows, 0052; newcomers'
-- networks' 'net:' rows, 0053) ran before the writer locked its own rows. At the hour's turn every
-- row of the last hour is stale, so two writers of two sources could each take the other's row for
-- deletion, then wait for their own: a deadlock (40P01) PostgreSQL broke by aborting one
-- (tests/bounds/store-subjects-sweep-order.test.ts). Now a writer charges its own rows first and
-- sweeps last, with SKIP LOCKED: it never waits while it holds another source's row. The same
-- charge otherwise, word for word (0053).
CREATE OR REPLACE FUNCTION city_store_charge_share(
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
  -- Last, with the writer's own rows held: stale rows of other sources, two of each kind.
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
  RETURN true;
END $$;
