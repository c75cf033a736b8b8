package filetools_test

import (
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/tools/filetools"
)

const echarts = "langgenius/echarts/echarts"

// TestBarAndLineCharts: the option is the plugin's, written as Python's json.dumps(indent=2,
// ensure_ascii=False) writes it (members in the plugin's order, text as it is), in an
// ```echarts block; values that are all digits are integers.
func TestBarAndLineCharts(t *testing.T) {
	t.Parallel()
	s := filetools.New(filetools.Options{})
	want := func(series string) string {
		return "```echarts\n" + `{
  "title": {
    "left": "center",
    "text": "销售 <Q1> & \"best\""
  },
  "tooltip": {
    "trigger": "axis",
    "axisPointer": {
      "type": "cross"
    }
  },
  "xAxis": {
    "type": "category",
    "data": [
      "a/b",
      "",
      "c"
    ]
  },
  "yAxis": {
    "type": "value"
  },
  "series": [
    {
      "data": [
        1,
        20,
        3
      ],
      "type": "` + series + `",
      "smooth": true
    }
  ]
}` + "\n```"
	}
	for _, series := range []string{"bar", "line"} {
		res := invoke(t, s, echarts, series+"_chart", nil, `{"title": "销售 <Q1> & \"best\"", "data": "1;020;3", "x_axis": "a/b;;c"}`)
		if res.IsError || res.Text != want(series) {
			t.Fatalf("%s:\n%s\nwant\n%s", series, res.Text, want(series))
		}
	}
}

// TestPieChart: a slice per value and category of the same rank (the longer list cut, as
// Python's zip cuts it); values that are not all digits are floats, spelled as Python spells
// them.
func TestPieChart(t *testing.T) {
	t.Parallel()
	s := filetools.New(filetools.Options{})
	res := invoke(t, s, echarts, "pie_chart", nil, `{"title": "Share", "data": "1.5;2; 3e20", "categories": "x;y"}`)
	want := "```echarts\n" + `{
  "title": {
    "left": "center",
    "text": "Share"
  },
  "tooltip": {
    "trigger": "item"
  },
  "legend": {
    "orient": "vertical",
    "left": "left"
  },
  "series": [
    {
      "type": "pie",
      "data": [
        {
          "value": 1.5,
          "name": "x"
        },
        {
          "value": 2.0,
          "name": "y"
        }
      ]
    }
  ]
}` + "\n```"
	if res.IsError || res.Text != want {
		t.Fatalf("%s\nwant\n%s", res.Text, want)
	}
	res = invoke(t, s, echarts, "pie_chart", nil, `{"title": "t", "data": "1_000;1e16;0.00001", "categories": "a;b;c"}`)
	for _, v := range []string{`"value": 1000.0,`, `"value": 1e+16,`, `"value": 1e-05,`} {
		if !strings.Contains(res.Text, v) {
			t.Errorf("%s not in\n%s", v, res.Text)
		}
	}
}

// TestChartInputs: missing labels are the plugin's hint before the chart; missing or
// unreadable data is refused with Python's words; non-finite values, which Python would write
// as invalid JSON, are refused; so is a chart over the output bound.
func TestChartInputs(t *testing.T) {
	t.Parallel()
	s := filetools.New(filetools.Options{})
	res := invoke(t, s, echarts, "line_chart", nil, `{"title": "t", "data": "1;2"}`)
	if res.IsError || !strings.HasPrefix(res.Text, "Please input x_axis```echarts\n{") || !strings.Contains(res.Text, "\"data\": [\n      \"\"\n    ]") {
		t.Fatalf("%+v", res)
	}
	res = invoke(t, s, echarts, "pie_chart", nil, `{"title": "t", "data": "1;2"}`)
	if res.IsError || !strings.HasPrefix(res.Text, "Please input categories```echarts\n") || !strings.Contains(res.Text, `"name": ""`) {
		t.Fatalf("%+v", res)
	}
	for args, want := range map[string]string{
		`{"title": "t", "x_axis": "a"}`:                  "Please input data",
		`{"title": "t", "data": "1;;2", "x_axis": "a"}`:  "could not convert string to float: ''",
		`{"title": "t", "data": "1;x", "x_axis": "a"}`:   "could not convert string to float: 'x'",
		`{"title": "t", "data": "0x10", "x_axis": "a"}`:  "could not convert string to float: '0x10'",
		`{"title": "t", "data": "1e400", "x_axis": "a"}`: "not a number JSON can hold",
		`{"title": "t", "data": "nan;1", "x_axis": "a"}`: "not a number JSON can hold",
	} {
		wantError(t, invoke(t, s, echarts, "bar_chart", nil, args), want)
	}
	small := filetools.New(filetools.Options{MaxOutputBytes: 300})
	wantError(t, invoke(t, small, echarts, "bar_chart", nil, jsonOf(t, map[string]any{"title": "t", "data": strings.Repeat("1;", 50) + "1", "x_axis": "a"})),
		"over 300 bytes")
	wantError(t, invoke(t, s, echarts, "bar_chart", nil, jsonOf(t, map[string]any{"title": "t", "data": strings.Repeat("1;", 100_000) + "1", "x_axis": "a"})),
		"at most 100000 values")
}
