SELECT city_make_append_only('clinic_attempts');
--> statement-breakpoint
SELECT city_make_append_only('clinic_outcomes');
