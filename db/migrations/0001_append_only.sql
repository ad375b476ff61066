-- Append-only is enforced here, not by good manners: any UPDATE, DELETE or TRUNCATE on a table
-- marked with city_make_append_only() is refused by the database itself, whoever connects.
CREATE OR REPLACE FUNCTION city_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'table % is append-only: % refused', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION city_make_append_only(tbl regclass) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION city_refuse_change()',
                 tbl::text || '_no_update_delete', tbl);
  EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION city_refuse_change()',
                 tbl::text || '_no_truncate', tbl);
END;
$$;
--> statement-breakpoint
SELECT city_make_append_only('residency_log');
