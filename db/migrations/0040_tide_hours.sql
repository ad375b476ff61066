-- The tide (the residency log's rows of the last 24 hours) is read by every poll, return and leave.
-- Counted over the log it cost an index range of a whole day's arrivals and departures per poll;
-- counted here it costs the hours of the window (at most 25 rows) and the log rows of its first,
-- partial hour only (lib/city/census.ts tideSql). Kept per UTC hour since the epoch by a statement
-- trigger on residency_log, in the appending transaction (appends are serialised by the log head).
CREATE TABLE "tide_hours" (
	"hour" bigint PRIMARY KEY NOT NULL,
	"rows" integer NOT NULL
);
--> statement-breakpoint
CREATE FUNCTION tide_hours_appended() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO tide_hours (hour, rows)
  SELECT floor(extract(epoch FROM at) / 3600)::bigint, count(*)::int FROM tide_new_rows GROUP BY 1
  ON CONFLICT (hour) DO UPDATE SET rows = tide_hours.rows + excluded.rows;
  -- Hours two days behind the newest rows no window reads again: at most one is removed per append.
  DELETE FROM tide_hours WHERE hour < (SELECT floor(extract(epoch FROM max(at)) / 3600)::bigint - 48 FROM tide_new_rows);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER tide_hours_appended AFTER INSERT ON residency_log
  REFERENCING NEW TABLE AS tide_new_rows FOR EACH STATEMENT EXECUTE FUNCTION tide_hours_appended();
--> statement-breakpoint
-- A database that already has a log: its rows of the last two days are counted once.
INSERT INTO tide_hours (hour, rows)
SELECT floor(extract(epoch FROM at) / 3600)::bigint, count(*)::int FROM residency_log
WHERE at > now() - interval '49 hours' GROUP BY 1;
