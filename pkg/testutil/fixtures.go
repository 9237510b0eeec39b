package testutil

import (
	"fmt"
	"testing"

	"github.com/gridshift/dataimport/pkg/postgres"
)

// WelcomeEmailRow inserts, with plain SQL, a supplier WELCOME_<n> with
// welcome e-mails on, an imported account A-ABC0000<n> with one customer
// (Dr Ada Lovelace, addr) and that customer's welcome e-mail row; it returns
// the row's ID. n keeps several fixtures in one database apart.
func WelcomeEmailRow(t testing.TB, db *postgres.DB, n int, addr string) int64 {
	t.Helper()
	g := db.Gorm()
	insert := func(sql string, args ...any) int64 {
		t.Helper()
		var id int64
		if err := g.Raw(sql, args...).Scan(&id).Error; err != nil {
			t.Fatalf("fixture %q: %v", sql, err)
		}
		return id
	}
	external := fmt.Sprintf("EXT-%d", n)
	supplierID := insert(`INSERT INTO import_suppliers (code, welcome_email) VALUES (?, true) RETURNING id`,
		fmt.Sprintf("WELCOME_%d", n))
	processID := insert(`INSERT INTO import_processes (supplier_id, external_account_number) VALUES (?, ?) RETURNING id`,
		supplierID, external)
	accountID := insert(`INSERT INTO accounts (platform_account_number, supplier_id, import_process_id, external_account_number, account_type)
		VALUES (?, ?, ?, ?, 'DOMESTIC') RETURNING id`, fmt.Sprintf("A-%08X", 0xABC00000+n), supplierID, processID, external)
	customerID := insert(`INSERT INTO account_customers (account_id, position, given_name, family_name, title, email)
		VALUES (?, 0, 'Ada', 'Lovelace', 'Dr', ?) RETURNING id`, accountID, addr)
	return insert(`INSERT INTO welcome_emails (account_id, customer_id, email) VALUES (?, ?, ?) RETURNING id`,
		accountID, customerID, addr)
}
