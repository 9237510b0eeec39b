package postgres_test

import (
	"testing"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// TestToastCompressionLZ4: every toastable column of our tables compresses
// with lz4 (migration 00016), so a column added later without it fails
// here.
func TestToastCompressionLZ4(t *testing.T) {
	t.Parallel()
	g := testutil.NewDatabase(t).DB.Gorm()
	var lz4 bool
	if err := g.Raw(`SELECT EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals))`).Scan(&lz4).Error; err != nil {
		t.Fatal(err)
	}
	if !lz4 {
		t.Skip("this Postgres is built without lz4")
	}
	var cols []struct{ Relname, Attname, Compression string }
	if err := g.Raw(`
		SELECT cl.relname, a.attname, a.attcompression::text AS compression
		  FROM pg_attribute a
		  JOIN pg_class cl ON cl.oid = a.attrelid
		  JOIN pg_namespace n ON n.oid = cl.relnamespace
		 WHERE n.nspname = current_schema() AND cl.relkind IN ('r', 'p')
		   AND a.attnum > 0 AND NOT a.attisdropped AND a.attstorage IN ('x', 'm')`).Scan(&cols).Error; err != nil {
		t.Fatal(err)
	}
	if len(cols) < 10 {
		t.Fatalf("found %d toastable columns: is the database migrated?", len(cols))
	}
	for _, c := range cols {
		if c.Compression != "l" {
			t.Errorf("%s.%s compresses with %q, want lz4 (ALTER TABLE … SET COMPRESSION lz4 in its migration)", c.Relname, c.Attname, c.Compression)
		}
	}
}
