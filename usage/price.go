package usage

// Price is a model's price per token: the base prices, and those of the
// tokens beyond the first 200,000 of a kind in one message (zero: no tier).
type Price struct {
	Input, Output, CacheCreate, CacheRead                     float64
	InputAbove, OutputAbove, CacheCreateAbove, CacheReadAbove float64
	// Fast multiplies the price of a message sent in fast mode (0: 1).
	Fast float64
}
