-- Migration 0055 renamed newcomer_networks to admission_networks and left a view under the old name
-- for instances of the code before it, still serving while it deployed. No code since reads or
-- writes that name (0055's and 0056's instances use admission_networks), so the view goes.
DROP VIEW IF EXISTS "newcomer_networks";
