SELECT city_make_append_only('residency_acceptances');
--> statement-breakpoint
SELECT city_make_append_only('ward_notes');
