-- City-wide store bounds without one row (issue 42, direction 2). Each store's counters are split
-- over 64 stripes (rows); each stripe holds a fixed share of every bound (the bound divided by the
-- stripes, the remainder spread over the first ones), so the shares sum exactly to the bound and a
-- stripe within its shares keeps the store within its bounds. A write charges ONE stripe, the
-- first with room that no other transaction holds (FOR UPDATE SKIP LOCKED from a random one), so
-- writers of different citizens lock different rows. When every stripe with room is held, it waits
-- for one of them. Only when no stripe has room for this write alone does it lock all of the
-- store's stripes in stripe order, count them together and move bytes between them ("rebalance"):
-- nothing is then refused while the store as a whole has room (no slack), and no bound is ever passed.
CREATE TABLE "city_store_stripes" (
	"store" text NOT NULL,
	"stripe" smallint NOT NULL,
	"total_bytes" bigint DEFAULT 0 NOT NULL,
	"hour_start" timestamp with time zone DEFAULT 'epoch' NOT NULL,
	"hour_bytes" bigint DEFAULT 0 NOT NULL,
	"newcomer_bytes" bigint DEFAULT 0 NOT NULL,
	-- The bounds the shares were split from (-1: never split); a charge whose configured bounds
	-- differ (an operator changed them) takes the all-stripes path, which splits them again.
	"bound_total" bigint DEFAULT -1 NOT NULL,
	"bound_hour" bigint DEFAULT -1 NOT NULL,
	"bound_newcomer" bigint DEFAULT -1 NOT NULL,
	"share_total" bigint DEFAULT 0 NOT NULL,
	"share_hour" bigint DEFAULT 0 NOT NULL,
	"share_newcomer" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "city_store_stripes_pkey" PRIMARY KEY ("store", "stripe"),
	CONSTRAINT "city_store_stripes_counts" CHECK ("total_bytes" >= 0 AND "hour_bytes" >= 0 AND "newcomer_bytes" >= 0)
);--> statement-breakpoint
-- Today's counters move to stripe 0 of their store (every counted byte kept, the hour's too);
-- stripes 1..63 start empty, and the first charge splits the shares and spreads the bytes.
INSERT INTO "city_store_stripes" ("store", "stripe", "total_bytes", "hour_start", "hour_bytes", "newcomer_bytes")
SELECT s."store", g.i, CASE WHEN g.i = 0 THEN s."total_bytes" ELSE 0 END, s."hour_start",
  CASE WHEN g.i = 0 THEN s."hour_bytes" ELSE 0 END, CASE WHEN g.i = 0 THEN s."newcomer_bytes" ELSE 0 END
FROM "city_stores" s CROSS JOIN generate_series(0, 63) AS g(i);--> statement-breakpoint
DROP TABLE "city_stores";--> statement-breakpoint
-- A stripe's part of `amount` split over n stripes: amount / n, plus one for the first amount % n.
CREATE OR REPLACE FUNCTION city_store_part(amount bigint, n integer, k integer) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT amount / n + CASE WHEN k < amount % n THEN 1 ELSE 0 END $$;
--> statement-breakpoint
-- A stripe's counted bytes once `held` bytes of a bound are spread so that every stripe has the
-- same room (± 1): its share minus its part of the room; past the bound, its share plus its part
-- of the excess. The parts sum to `held`, and none is negative (room <= bound).
CREATE OR REPLACE FUNCTION city_store_spread(bound bigint, held bigint, n integer, k integer) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN held <= bound THEN city_store_part(bound, n, k) - city_store_part(bound - held, n, k)
    ELSE city_store_part(bound, n, k) + city_store_part(held - bound, n, k) END $$;
--> statement-breakpoint
-- Charges `bytes` to a store (a negative charge frees bytes, never below zero, and is never
-- refused); false: it does not fit, nothing changed. Called once per write, in the write's own
-- statement and transaction, after the write is proven and its per-citizen limits passed.
CREATE OR REPLACE FUNCTION city_store_charge(
  p_store text, p_bytes bigint, p_newcomer boolean, p_hour timestamptz, p_home integer,
  p_total bigint, p_per_hour bigint, p_newcomer_per_hour bigint) RETURNS boolean
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
        WHERE store = p_store AND bound_total = p_total AND bound_hour = p_per_hour AND bound_newcomer = p_newcomer_per_hour
          AND total_bytes + p_bytes <= share_total
          AND (CASE WHEN hour_start >= p_hour THEN hour_bytes ELSE 0 END) + p_bytes <= share_hour
          AND (NOT p_newcomer OR (CASE WHEN hour_start >= p_hour THEN newcomer_bytes ELSE 0 END) + p_bytes <= share_newcomer)
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
      WHERE store = p_store AND bound_total = p_total AND bound_hour = p_per_hour AND bound_newcomer = p_newcomer_per_hour
        AND total_bytes + p_bytes <= share_total
        AND (CASE WHEN hour_start >= p_hour THEN hour_bytes ELSE 0 END) + p_bytes <= share_hour
        AND (NOT p_newcomer OR (CASE WHEN hour_start >= p_hour THEN newcomer_bytes ELSE 0 END) + p_bytes <= share_newcomer)
      ORDER BY stripe < p_home, stripe LIMIT 1;
    IF v_wait IS NOT NULL THEN
      BEGIN
        SELECT stripe INTO STRICT v_stripe FROM city_store_stripes
          WHERE store = p_store AND stripe = v_wait
            AND bound_total = p_total AND bound_hour = p_per_hour AND bound_newcomer = p_newcomer_per_hour
            AND total_bytes + p_bytes <= share_total
            AND (CASE WHEN hour_start >= p_hour THEN hour_bytes ELSE 0 END) + p_bytes <= share_hour
            AND (NOT p_newcomer OR (CASE WHEN hour_start >= p_hour THEN newcomer_bytes ELSE 0 END) + p_bytes <= share_newcomer)
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
    IF v_total + p_bytes > p_total OR v_hour + p_bytes > p_per_hour OR (p_newcomer AND v_newcomer + p_bytes > p_newcomer_per_hour) THEN
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
    bound_total = p_total, bound_hour = p_per_hour, bound_newcomer = p_newcomer_per_hour,
    share_total = city_store_part(p_total, v_n, r.k),
    share_hour = city_store_part(p_per_hour, v_n, r.k),
    share_newcomer = city_store_part(p_newcomer_per_hour, v_n, r.k)
  FROM (SELECT stripe, (row_number() OVER (ORDER BY stripe) - 1)::integer AS k FROM city_store_stripes WHERE store = p_store) r
  WHERE s.store = p_store AND s.stripe = r.stripe;
  RETURN true;
END $$;
