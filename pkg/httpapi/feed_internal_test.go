package httpapi

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// The document's list of event types is the domain's list.
func TestOpenAPIFeedEventTypes(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				FeedEventType struct {
					Enum []string `json:"enum"`
				}
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(slices.Values(doc.Components.Schemas.FeedEventType.Enum))
	want := slices.Sorted(slices.Values(dataimport.PublishedTypes()))
	if !slices.Equal(got, want) {
		t.Fatalf("FeedEventType enum %v, want dataimport.PublishedTypes() %v", got, want)
	}
}
