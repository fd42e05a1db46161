-- The serving samples (`serving_samples`) between $from and $to, which the analysis
-- computes once and keeps as that table for everything after it that reads them (the
-- extent, the serving series, the serving rules): the view reads `metrics` three times,
-- and a page whose metric names straddle a serving metric's name is decoded even when the
-- store holds no serving sample (1000 nodes x a day: ~0.3 s a read). The analysis passes
-- its window widened by the hour the serving rules look either side of a slowdown
-- (`causes/serving_around.sql`), so every reader finds the rows it would have read.
SELECT * FROM serving_samples WHERE time >= $from AND time <= $to;
