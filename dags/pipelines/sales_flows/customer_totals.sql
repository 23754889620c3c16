CREATE MATERIALIZED VIEW customer_totals AS
SELECT customer_id, count(*) AS txns, sum(amount_eur) AS total_eur FROM booked_eur GROUP BY customer_id
