package models

import (
	"math/big"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/config"
)

// Usage is the token usage of one or more model calls with its cost, as
// Dify reports it in metadata.usage (its LLMUsage; docs/dify-compat.md,
// "Usage and prices"). Prices are decimal strings, exactly as Dify
// serialises its Decimals; the JSON names are Dify's.
type Usage struct {
	// PromptTokens counts the input tokens.
	PromptTokens int `json:"prompt_tokens"`
	// CompletionTokens counts the generated tokens.
	CompletionTokens int `json:"completion_tokens"`
	// TotalTokens is PromptTokens + CompletionTokens.
	TotalTokens int `json:"total_tokens"`

	// PromptUnitPrice is the configured input price ("2.50"), or "0.0".
	PromptUnitPrice string `json:"prompt_unit_price"`
	// PromptPriceUnit is the configured unit ("0.000001"), or "0.0".
	PromptPriceUnit string `json:"prompt_price_unit"`
	// PromptPrice is tokens × unit price × unit, 7 decimal places, or
	// "0.0" when unpriced.
	PromptPrice string `json:"prompt_price"`

	// CompletionUnitPrice is the configured output price, or "0.0".
	CompletionUnitPrice string `json:"completion_unit_price"`
	// CompletionPriceUnit is the configured unit, or "0.0".
	CompletionPriceUnit string `json:"completion_price_unit"`
	// CompletionPrice is like PromptPrice for completion tokens.
	CompletionPrice string `json:"completion_price"`

	// TotalPrice is PromptPrice + CompletionPrice.
	TotalPrice string `json:"total_price"`
	// Currency is the prompt price's currency; "USD" when unpriced.
	Currency string `json:"currency"`
	// Latency is the call duration in seconds (summed over calls).
	Latency float64 `json:"latency"`
}

// zeroDecimal is how Dify writes an absent price (Decimal("0.0")).
const zeroDecimal = "0.0"

// priceScale is Dify's quantum: Decimal("0.0000001"), ROUND_HALF_UP.
const priceScale = 7

// EmptyUsage returns Dify's LLMUsage.empty_usage(): no tokens, all prices
// "0.0", currency USD, no latency. Use it for runs that made no model call.
func EmptyUsage() Usage {
	return Usage{
		PromptUnitPrice: zeroDecimal, PromptPriceUnit: zeroDecimal, PromptPrice: zeroDecimal,
		CompletionUnitPrice: zeroDecimal, CompletionPriceUnit: zeroDecimal, CompletionPrice: zeroDecimal,
		TotalPrice: zeroDecimal, Currency: config.DefaultCurrency,
	}
}

// ComputeUsage prices one model call the way Dify's AIModel.get_price and
// _calc_response_usage do: for each side, price = tokens × unit price ×
// unit, quantized to 7 decimal places with ROUND_HALF_UP ("0.0025825");
// total = prompt price + completion price. A side without a price (p nil,
// empty or unparsable Input/Output or Unit) gets "0.0" for its unit price,
// price unit and price, like Dify's zero PriceInfo. The currency is the
// prompt side's (the configured one, USD when empty), USD when the prompt
// side is unpriced. The arithmetic is exact (math/big), never float64.
func ComputeUsage(p *Pricing, promptTokens, completionTokens int, latency time.Duration) Usage {
	u := Usage{
		PromptTokens:     promptTokens,
		CompletionTokens: completionTokens,
		TotalTokens:      promptTokens + completionTokens,
		Latency:          latency.Seconds(),
	}
	var in, out side
	if p != nil {
		in = price(p.Input, p.Unit, p.Currency, promptTokens)
		out = price(p.Output, p.Unit, p.Currency, completionTokens)
	} else {
		in, out = unpriced(), unpriced()
	}
	u.PromptUnitPrice, u.PromptPriceUnit, u.PromptPrice = in.unitPrice, in.unit, in.amount.String()
	u.CompletionUnitPrice, u.CompletionPriceUnit, u.CompletionPrice = out.unitPrice, out.unit, out.amount.String()
	u.TotalPrice = in.amount.add(out.amount).String()
	u.Currency = in.currency
	return u
}

// AddUsage sums two usages the way Dify's LLMUsage.plus does (multi-call
// runs such as agent rounds or several LLM nodes): if a has no tokens the
// result is b unchanged; otherwise tokens, prices and latencies add up and
// the unit prices, price units and currency are b's (the latest call's).
// Prices are added exactly; the sum keeps the larger number of decimal
// places ("0.0" + "0.0013500" = "0.0013500").
func AddUsage(a, b Usage) Usage {
	if a.TotalTokens == 0 {
		return b
	}
	return Usage{
		PromptTokens:        a.PromptTokens + b.PromptTokens,
		CompletionTokens:    a.CompletionTokens + b.CompletionTokens,
		TotalTokens:         a.TotalTokens + b.TotalTokens,
		PromptUnitPrice:     b.PromptUnitPrice,
		PromptPriceUnit:     b.PromptPriceUnit,
		PromptPrice:         parseDecimal(a.PromptPrice).add(parseDecimal(b.PromptPrice)).String(),
		CompletionUnitPrice: b.CompletionUnitPrice,
		CompletionPriceUnit: b.CompletionPriceUnit,
		CompletionPrice:     parseDecimal(a.CompletionPrice).add(parseDecimal(b.CompletionPrice)).String(),
		TotalPrice:          parseDecimal(a.TotalPrice).add(parseDecimal(b.TotalPrice)).String(),
		Currency:            b.Currency,
		Latency:             a.Latency + b.Latency,
	}
}

// side is one side (prompt or completion) of a priced call.
type side struct {
	unitPrice, unit, currency string
	amount                    decimal
}

func unpriced() side {
	return side{unitPrice: zeroDecimal, unit: zeroDecimal, currency: config.DefaultCurrency, amount: decimal{scale: 1}}
}

func price(unitPrice, unit, currency string, tokens int) side {
	unitPrice, unit = strings.TrimSpace(unitPrice), strings.TrimSpace(unit)
	up, ok1 := new(big.Rat).SetString(unitPrice)
	un, ok2 := new(big.Rat).SetString(unit)
	if !ok1 || !ok2 {
		return unpriced()
	}
	if currency == "" {
		currency = config.DefaultCurrency
	}
	total := new(big.Rat).SetInt64(int64(tokens))
	total.Mul(total, up)
	total.Mul(total, un)
	return side{unitPrice: unitPrice, unit: unit, currency: currency, amount: quantize(total, priceScale)}
}

// decimal is an exact decimal number: mant × 10^-scale. It mirrors the
// parts of Python's Decimal that matter here: addition keeps the larger
// scale, and String prints exactly scale digits after the point.
type decimal struct {
	mant  *big.Int // nil means 0
	scale int
}

// quantize rounds r to scale decimal places, ROUND_HALF_UP (halves away
// from zero, as Python's decimal.ROUND_HALF_UP).
func quantize(r *big.Rat, scale int) decimal {
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	num := new(big.Int).Mul(r.Num(), pow)
	den := r.Denom()
	q, rem := new(big.Int).QuoRem(num, den, new(big.Int))
	// |rem|*2 >= den → round away from zero.
	rem.Abs(rem).Lsh(rem, 1)
	if rem.Cmp(den) >= 0 {
		if num.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return decimal{mant: q, scale: scale}
}

// parseDecimal reads a plain decimal string ("0.0025825", "0.0", "12").
// Anything else (empty, exponent notation) is converted exactly through
// big.Rat at the price scale, or read as zero when not a number at all.
func parseDecimal(s string) decimal {
	s = strings.TrimSpace(s)
	if s == "" {
		return decimal{scale: 1}
	}
	digits, scale := s, 0
	if i := strings.IndexByte(s, '.'); i >= 0 {
		digits, scale = s[:i]+s[i+1:], len(s)-i-1
	}
	if m, ok := new(big.Int).SetString(digits, 10); ok {
		return decimal{mant: m, scale: scale}
	}
	if r, ok := new(big.Rat).SetString(s); ok {
		return quantize(r, priceScale)
	}
	return decimal{scale: 1}
}

func (d decimal) int() *big.Int {
	if d.mant == nil {
		return new(big.Int)
	}
	return d.mant
}

func (d decimal) add(e decimal) decimal {
	scale := max(d.scale, e.scale)
	a := rescale(d.int(), scale-d.scale)
	b := rescale(e.int(), scale-e.scale)
	return decimal{mant: new(big.Int).Add(a, b), scale: scale}
}

func rescale(m *big.Int, by int) *big.Int {
	if by == 0 {
		return m
	}
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(by)), nil)
	return new(big.Int).Mul(m, pow)
}

// String prints the number with exactly scale fractional digits (at least
// one, so zero is "0.0" rather than "0").
func (d decimal) String() string {
	scale := max(d.scale, 1)
	m := rescale(d.int(), scale-d.scale)
	neg := m.Sign() < 0
	digits := new(big.Int).Abs(m).String()
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	cut := len(digits) - scale
	s := digits[:cut] + "." + digits[cut:]
	if neg {
		s = "-" + s
	}
	return s
}
