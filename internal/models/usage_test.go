package models

import (
	"encoding/json"
	"math/big"
	"testing"
	"time"
)

func TestComputeUsage(t *testing.T) {
	t.Parallel()
	gpt4o := &Pricing{Input: "2.50", Output: "10.00", Unit: "0.000001", Currency: "USD"}
	tests := []struct {
		name          string
		p             *Pricing
		prompt, compl int
		latency       time.Duration
		want          Usage
	}{
		{
			// The worked example of docs/dify-compat.md, "Usage and prices".
			name: "gpt-4o worked example", p: gpt4o, prompt: 1033, compl: 135, latency: 1500 * time.Millisecond,
			want: Usage{
				PromptTokens: 1033, CompletionTokens: 135, TotalTokens: 1168,
				PromptUnitPrice: "2.50", PromptPriceUnit: "0.000001", PromptPrice: "0.0025825",
				CompletionUnitPrice: "10.00", CompletionPriceUnit: "0.000001", CompletionPrice: "0.0013500",
				TotalPrice: "0.0039325", Currency: "USD", Latency: 1.5,
			},
		},
		{
			name: "nil pricing: Dify zero values", p: nil, prompt: 10, compl: 5,
			want: Usage{
				PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15,
				PromptUnitPrice: "0.0", PromptPriceUnit: "0.0", PromptPrice: "0.0",
				CompletionUnitPrice: "0.0", CompletionPriceUnit: "0.0", CompletionPrice: "0.0",
				TotalPrice: "0.0", Currency: "USD",
			},
		},
		{
			// text-embedding-3-small style: no output price.
			name: "no output price", p: &Pricing{Input: "0.02", Unit: "0.000001", Currency: "USD"}, prompt: 1000, compl: 0,
			want: Usage{
				PromptTokens: 1000, TotalTokens: 1000,
				PromptUnitPrice: "0.02", PromptPriceUnit: "0.000001", PromptPrice: "0.0000200",
				CompletionUnitPrice: "0.0", CompletionPriceUnit: "0.0", CompletionPrice: "0.0",
				TotalPrice: "0.0000200", Currency: "USD",
			},
		},
		{
			name: "zero tokens with pricing", p: gpt4o, prompt: 0, compl: 0,
			want: Usage{
				PromptUnitPrice: "2.50", PromptPriceUnit: "0.000001", PromptPrice: "0.0000000",
				CompletionUnitPrice: "10.00", CompletionPriceUnit: "0.000001", CompletionPrice: "0.0000000",
				TotalPrice: "0.0000000", Currency: "USD",
			},
		},
		{
			// 1 × 0.15 × 0.000001 = 0.00000015 → half rounds up to 0.0000002;
			// 1 × 0.14 × 0.000001 = 0.00000014 → 0.0000001.
			name: "round half up", p: &Pricing{Input: "0.15", Output: "0.14", Unit: "0.000001", Currency: "USD"}, prompt: 1, compl: 1,
			want: Usage{
				PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2,
				PromptUnitPrice: "0.15", PromptPriceUnit: "0.000001", PromptPrice: "0.0000002",
				CompletionUnitPrice: "0.14", CompletionPriceUnit: "0.000001", CompletionPrice: "0.0000001",
				TotalPrice: "0.0000003", Currency: "USD",
			},
		},
		{
			// 0.0000000499… rounds down, not up: no float64 on the way.
			name: "below half rounds down", p: &Pricing{Input: "0.0499999", Output: "0.05", Unit: "0.000001", Currency: "USD"}, prompt: 1, compl: 1,
			want: Usage{
				PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2,
				PromptUnitPrice: "0.0499999", PromptPriceUnit: "0.000001", PromptPrice: "0.0000000",
				CompletionUnitPrice: "0.05", CompletionPriceUnit: "0.000001", CompletionPrice: "0.0000001",
				TotalPrice: "0.0000001", Currency: "USD",
			},
		},
		{
			name: "per-1K unit, RMB, large counts", p: &Pricing{Input: "0.0005", Output: "0.0015", Unit: "0.001", Currency: "RMB"},
			prompt: 123456789, compl: 987654321,
			want: Usage{
				PromptTokens: 123456789, CompletionTokens: 987654321, TotalTokens: 1111111110,
				PromptUnitPrice: "0.0005", PromptPriceUnit: "0.001", PromptPrice: "61.7283945",
				CompletionUnitPrice: "0.0015", CompletionPriceUnit: "0.001", CompletionPrice: "1481.4814815",
				TotalPrice: "1543.2098760", Currency: "RMB",
			},
		},
		{
			name: "empty currency defaults to USD", p: &Pricing{Input: "1", Output: "2", Unit: "0.001"}, prompt: 3, compl: 4,
			want: Usage{
				PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7,
				PromptUnitPrice: "1", PromptPriceUnit: "0.001", PromptPrice: "0.0030000",
				CompletionUnitPrice: "2", CompletionPriceUnit: "0.001", CompletionPrice: "0.0080000",
				TotalPrice: "0.0110000", Currency: "USD",
			},
		},
		{
			name: "unparsable unit: unpriced", p: &Pricing{Input: "1", Output: "2", Unit: "per-million", Currency: "EUR"}, prompt: 3, compl: 4,
			want: Usage{
				PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7,
				PromptUnitPrice: "0.0", PromptPriceUnit: "0.0", PromptPrice: "0.0",
				CompletionUnitPrice: "0.0", CompletionPriceUnit: "0.0", CompletionPrice: "0.0",
				TotalPrice: "0.0", Currency: "USD",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ComputeUsage(tt.p, tt.prompt, tt.compl, tt.latency)
			if got != tt.want {
				t.Fatalf("ComputeUsage\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestAddUsage(t *testing.T) {
	t.Parallel()
	gpt4o := &Pricing{Input: "2.50", Output: "10.00", Unit: "0.000001", Currency: "USD"}
	mini := &Pricing{Input: "0.15", Output: "0.60", Unit: "0.000001", Currency: "USD"}
	a := ComputeUsage(gpt4o, 1033, 135, time.Second)
	b := ComputeUsage(mini, 100, 20, 500*time.Millisecond)
	free := ComputeUsage(nil, 7, 3, 250*time.Millisecond)

	tests := []struct {
		name string
		a, b Usage
		want Usage
	}{
		{
			name: "two priced calls: sums, unit prices of the latest",
			a:    a, b: b,
			want: Usage{
				PromptTokens: 1133, CompletionTokens: 155, TotalTokens: 1288,
				PromptUnitPrice: "0.15", PromptPriceUnit: "0.000001", PromptPrice: "0.0025975",
				CompletionUnitPrice: "0.60", CompletionPriceUnit: "0.000001", CompletionPrice: "0.0013620",
				TotalPrice: "0.0039595", Currency: "USD", Latency: 1.5,
			},
		},
		{
			name: "empty first operand returns the second (LLMUsage.plus)",
			a:    EmptyUsage(), b: a, want: a,
		},
		{
			name: "priced plus free keeps 7 places",
			a:    a, b: free,
			want: Usage{
				PromptTokens: 1040, CompletionTokens: 138, TotalTokens: 1178,
				PromptUnitPrice: "0.0", PromptPriceUnit: "0.0", PromptPrice: "0.0025825",
				CompletionUnitPrice: "0.0", CompletionPriceUnit: "0.0", CompletionPrice: "0.0013500",
				TotalPrice: "0.0039325", Currency: "USD", Latency: 1.25,
			},
		},
		{
			name: "free plus free stays 0.0",
			a:    free, b: free,
			want: Usage{
				PromptTokens: 14, CompletionTokens: 6, TotalTokens: 20,
				PromptUnitPrice: "0.0", PromptPriceUnit: "0.0", PromptPrice: "0.0",
				CompletionUnitPrice: "0.0", CompletionPriceUnit: "0.0", CompletionPrice: "0.0",
				TotalPrice: "0.0", Currency: "USD", Latency: 0.5,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := AddUsage(tt.a, tt.b); got != tt.want {
				t.Fatalf("AddUsage\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestEmptyUsage(t *testing.T) {
	t.Parallel()
	want := Usage{
		PromptUnitPrice: "0.0", PromptPriceUnit: "0.0", PromptPrice: "0.0",
		CompletionUnitPrice: "0.0", CompletionPriceUnit: "0.0", CompletionPrice: "0.0",
		TotalPrice: "0.0", Currency: "USD",
	}
	if got := EmptyUsage(); got != want {
		t.Fatalf("EmptyUsage() = %+v", got)
	}
	if ComputeUsage(nil, 0, 0, 0) != want {
		t.Fatalf("ComputeUsage(nil, 0, 0, 0) = %+v", ComputeUsage(nil, 0, 0, 0))
	}
}

func TestDecimal(t *testing.T) {
	t.Parallel()
	quant := map[string]string{
		"0":            "0.0000000",
		"1/20000000":   "0.0000001", // exactly half a quantum rounds up
		"-1/20000000":  "-0.0000001",
		"1/30000000":   "0.0000000",
		"12345678/100": "123456.7800000",
		"2/3":          "0.6666667",
	}
	for in, want := range quant {
		r, _ := new(big.Rat).SetString(in)
		if got := quantize(r, 7).String(); got != want {
			t.Errorf("quantize(%s) = %s, want %s", in, got, want)
		}
	}
	parse := map[string]string{
		"":          "0.0",
		"0.0":       "0.0",
		"0.0025825": "0.0025825",
		"12":        "12.0",
		"-0.5":      "-0.5",
		"0E-7":      "0.0000000",
		"1e-7":      "0.0000001",
		"garbage":   "0.0",
	}
	for in, want := range parse {
		if got := parseDecimal(in).String(); got != want {
			t.Errorf("parseDecimal(%q) = %s, want %s", in, got, want)
		}
	}
	if got := parseDecimal("0.1").add(parseDecimal("0.0000002")).String(); got != "0.1000002" {
		t.Errorf("0.1 + 0.0000002 = %s", got)
	}
}

func BenchmarkComputeUsage(b *testing.B) {
	p := &Pricing{Input: "2.50", Output: "10.00", Unit: "0.000001", Currency: "USD"}
	b.ReportAllocs()
	for b.Loop() {
		ComputeUsage(p, 1033, 135, time.Second)
	}
}

// TestUsageJSONNames: Usage marshals with Dify's LLMUsage names, as stored in message metadata.
func TestUsageJSONNames(t *testing.T) {
	b, err := json.Marshal(ComputeUsage(&Pricing{Input: "2.50", Output: "10.00", Unit: "0.000001", Currency: "USD"}, 1033, 135, 0))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"prompt_tokens":1033,"completion_tokens":135,"total_tokens":1168,"prompt_unit_price":"2.50","prompt_price_unit":"0.000001","prompt_price":"0.0025825","completion_unit_price":"10.00","completion_price_unit":"0.000001","completion_price":"0.0013500","total_price":"0.0039325","currency":"USD","latency":0}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}
