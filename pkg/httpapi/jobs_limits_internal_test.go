package httpapi

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"
)

// TestUploadBoundCodesAreDocumented: every code an upload bound answers
// has its status, and the job upload operation of the OpenAPI document
// lists it under that status (a partner's generated client sees it).
func TestUploadBoundCodesAreDocumented(t *testing.T) {
	want := map[string]int{CodeUploadIdleTimeout: 408, CodeTooManyUploads: 429, CodeTooManyLines: 413,
		CodeCompressionRatioExceeded: 413, CodeJobMostlyInvalid: 400}
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Content map[string]struct {
					Schema struct {
						AllOf []struct {
							Properties struct {
								Code struct {
									Enum []string `json:"enum"`
								} `json:"code"`
							} `json:"properties"`
						} `json:"allOf"`
					} `json:"schema"`
				} `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	op := doc.Paths["/v1/data-import/jobs/"]["post"]
	for code, status := range want {
		e := uploadIdleTimeout(0, false)
		e.Code = code
		if got := errorStatus(e); got != status {
			t.Errorf("%s: status %d, want %d", code, got, status)
		}
		var listed bool
		for _, s := range op.Responses[strconv.Itoa(status)].Content["application/json"].Schema.AllOf {
			listed = listed || slices.Contains(s.Properties.Code.Enum, code)
		}
		if !listed {
			t.Errorf("%s is not listed under %d of POST /v1/data-import/jobs/ in the OpenAPI document", code, status)
		}
	}
}
