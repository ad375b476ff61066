-- Fair under flood, after admission (issue 43, items 1, 2 and 4).
--
-- The reserve: newcomers (admitted less than 24 hours ago) and visitors may fill a store's total only
-- up to its newcomer line (the total less at least a fifth); every stripe keeps its part of that
-- line beside its other shares (share_newcomer_total, split like the others from bound_newcomer_total).
ALTER TABLE "city_store_stripes" ADD COLUMN "bound_newcomer_total" bigint DEFAULT -1 NOT NULL;--> statement-breakpoint
ALTER TABLE "city_store_stripes" ADD COLUMN "share_newcomer_total" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Shares per subject: each subject (a citizen by its DID, a visitor by its source prefix) has its own
-- row per store with its bytes this clock hour and its bytes in total, so one subject can take at
-- most its published share of the store's hour (and, for append-only stores, its own total). Only
-- the subject's own writes ever lock its row: no row that every caller locks.
CREATE TABLE "city_store_subjects" (
	"store" text NOT NULL,
	"subject" text NOT NULL,
	"hour_start" timestamp with time zone DEFAULT 'epoch' NOT NULL,
	"hour_bytes" bigint DEFAULT 0 NOT NULL,
	"total_bytes" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "city_store_subjects_pkey" PRIMARY KEY ("store", "subject"),
	CONSTRAINT "city_store_subjects_counts" CHECK ("hour_bytes" >= 0 AND "total_bytes" >= 0)
);--> statement-breakpoint
-- The store charge of migration 0044 with the newcomer line of the total (p_newcomer_total): a
-- newcomer's charge fits only while the store's total stays within it.
CREATE OR REPLACE FUNCTION city_store_charge(
  p_store text, p_bytes bigint, p_newcomer boolean, p_hour timestamptz, p_home integer,
  p_total bigint, p_per_hour bigint, p_newcomer_per_hour bigint, p_newcomer_total bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_stripe smallint;
  v_n integer;
  v_total bigint;
  v_hour bigint;
  v_newcomer bigint;
  v_latest timestamptz;
  v_wait smallint;
BEGIN
  IF p_bytes = 0 THEN
    RETURN true;
  END IF;
  -- One stripe no other transaction holds, from the home stripe on. In a block of its own: a row
  -- this look locked but then left (changed since the statement began, and now without room)
  -- is released with the block, so the all-stripes path below waits holding no stripe.
  BEGIN
    IF p_bytes > 0 THEN
      SELECT stripe INTO STRICT v_stripe FROM city_store_stripes
        WHERE store = p_store AND bound_total = p_total AND bound_hour = p_per_hour AND bound_newcomer = p_newcomer_per_hour AND bound_newcomer_total = p_newcomer_total
          AND total_bytes + p_bytes <= share_total
          AND (CASE WHEN hour_start >= p_hour THEN hour_bytes ELSE 0 END) + p_bytes <= share_hour
          AND (NOT p_newcomer OR ((CASE WHEN hour_start >= p_hour THEN newcomer_bytes ELSE 0 END) + p_bytes <= share_newcomer
            AND total_bytes + p_bytes <= share_newcomer_total))
        ORDER BY stripe < p_home, stripe LIMIT 1 FOR UPDATE SKIP LOCKED;
    ELSE
      SELECT stripe INTO STRICT v_stripe FROM city_store_stripes
        WHERE store = p_store AND total_bytes >= -p_bytes
        ORDER BY stripe < p_home, stripe LIMIT 1 FOR UPDATE SKIP LOCKED;
    END IF;
  EXCEPTION WHEN no_data_found THEN
    v_stripe := NULL;
  END;
  IF v_stripe IS NULL AND p_bytes > 0 THEN
    -- A stripe has room, as this statement's snapshot sees, but writers in flight hold every such
    -- stripe: wait for that one alone (holding no stripe of the store, so no wait cycle), and take
    -- it if it still has room once its holder is done. Else the all-stripes path below.
    SELECT stripe INTO v_wait FROM city_store_stripes
      WHERE store = p_store AND bound_total = p_total AND bound_hour = p_per_hour AND bound_newcomer = p_newcomer_per_hour AND bound_newcomer_total = p_newcomer_total
        AND total_bytes + p_bytes <= share_total
        AND (CASE WHEN hour_start >= p_hour THEN hour_bytes ELSE 0 END) + p_bytes <= share_hour
        AND (NOT p_newcomer OR ((CASE WHEN hour_start >= p_hour THEN newcomer_bytes ELSE 0 END) + p_bytes <= share_newcomer
            AND total_bytes + p_bytes <= share_newcomer_total))
      ORDER BY stripe < p_home, stripe LIMIT 1;
    IF v_wait IS NOT NULL THEN
      BEGIN
        SELECT stripe INTO STRICT v_stripe FROM city_store_stripes
          WHERE store = p_store AND stripe = v_wait
            AND bound_total = p_total AND bound_hour = p_per_hour AND bound_newcomer = p_newcomer_per_hour AND bound_newcomer_total = p_newcomer_total
            AND total_bytes + p_bytes <= share_total
            AND (CASE WHEN hour_start >= p_hour THEN hour_bytes ELSE 0 END) + p_bytes <= share_hour
            AND (NOT p_newcomer OR ((CASE WHEN hour_start >= p_hour THEN newcomer_bytes ELSE 0 END) + p_bytes <= share_newcomer
            AND total_bytes + p_bytes <= share_newcomer_total))
          FOR UPDATE;
      EXCEPTION WHEN no_data_found THEN
        v_stripe := NULL;
      END;
    END IF;
  END IF;
  IF v_stripe IS NOT NULL THEN
    UPDATE city_store_stripes SET
      total_bytes = total_bytes + p_bytes,
      hour_bytes = (CASE WHEN hour_start >= p_hour THEN hour_bytes ELSE 0 END) + greatest(p_bytes, 0),
      newcomer_bytes = (CASE WHEN hour_start >= p_hour THEN newcomer_bytes ELSE 0 END) + CASE WHEN p_newcomer THEN greatest(p_bytes, 0) ELSE 0 END,
      hour_start = greatest(hour_start, p_hour)
      WHERE store = p_store AND stripe = v_stripe;
    RETURN true;
  END IF;
  -- Every stripe of the store, locked in stripe order (so two writers here never deadlock), counted
  -- together: the write fits when the store as a whole has room.
  PERFORM 1 FROM city_store_stripes WHERE store = p_store ORDER BY stripe FOR UPDATE;
  SELECT count(*), sum(total_bytes), sum(CASE WHEN hour_start >= p_hour THEN hour_bytes ELSE 0 END),
      sum(CASE WHEN hour_start >= p_hour THEN newcomer_bytes ELSE 0 END), max(hour_start)
    INTO v_n, v_total, v_hour, v_newcomer, v_latest FROM city_store_stripes WHERE store = p_store;
  IF v_n = 0 THEN
    RETURN false;
  END IF;
  IF p_bytes > 0 THEN
    IF v_total + p_bytes > p_total OR v_hour + p_bytes > p_per_hour
        OR (p_newcomer AND (v_newcomer + p_bytes > p_newcomer_per_hour OR v_total + p_bytes > p_newcomer_total)) THEN
      RETURN false;
    END IF;
    v_total := v_total + p_bytes;
    v_hour := v_hour + p_bytes;
    v_newcomer := v_newcomer + CASE WHEN p_newcomer THEN p_bytes ELSE 0 END;
  ELSE
    v_total := greatest(v_total + p_bytes, 0);
  END IF;
  -- The shares split again from the bounds as configured, and the bytes spread so that every
  -- stripe has the same room: the next writers find one with room without this path.
  UPDATE city_store_stripes s SET
    total_bytes = city_store_spread(p_total, v_total, v_n, r.k),
    -- An instance whose clock is a little behind never moves the store's hour back.
    hour_start = greatest(p_hour, v_latest),
    hour_bytes = city_store_spread(p_per_hour, v_hour, v_n, r.k),
    newcomer_bytes = city_store_spread(p_newcomer_per_hour, v_newcomer, v_n, r.k),
    bound_total = p_total, bound_hour = p_per_hour, bound_newcomer = p_newcomer_per_hour, bound_newcomer_total = p_newcomer_total,
    share_total = city_store_part(p_total, v_n, r.k),
    share_hour = city_store_part(p_per_hour, v_n, r.k),
    share_newcomer = city_store_part(p_newcomer_per_hour, v_n, r.k),
    share_newcomer_total = city_store_part(p_newcomer_total, v_n, r.k)
  FROM (SELECT stripe, (row_number() OVER (ORDER BY stripe) - 1)::integer AS k FROM city_store_stripes WHERE store = p_store) r
  WHERE s.store = p_store AND s.stripe = r.stripe;
  RETURN true;
END $$;
--> statement-breakpoint
-- The 0044 signature, kept for its callers: no newcomer line below the total.
CREATE OR REPLACE FUNCTION city_store_charge(
  p_store text, p_bytes bigint, p_newcomer boolean, p_hour timestamptz, p_home integer,
  p_total bigint, p_per_hour bigint, p_newcomer_per_hour bigint) RETURNS boolean
LANGUAGE sql AS $$ SELECT city_store_charge(p_store, p_bytes, p_newcomer, p_hour, p_home, p_total, p_per_hour, p_newcomer_per_hour, p_total) $$;
--> statement-breakpoint
-- A subject's charge: its own row first (created on its first write, then locked: only this
-- subject's writes wait for it), checked against its share of the hour and its own total; then the
-- store's stripes; then its row counts the bytes. Refused at either, nothing changes (false). A
-- release (negative bytes) or a write without a subject is the store's charge alone.
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
  INSERT INTO city_store_subjects (store, subject) VALUES (p_store, p_subject) ON CONFLICT DO NOTHING;
  SELECT CASE WHEN hour_start >= p_hour THEN hour_bytes ELSE 0 END, total_bytes INTO v_hour, v_total
    FROM city_store_subjects WHERE store = p_store AND subject = p_subject FOR UPDATE;
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
