package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// ProductResult is what create-or-update did with one product.
type ProductResult struct {
	Code    string `json:"code"`
	Created bool   `json:"created"`
}

// UpsertProducts creates or updates the products in one transaction, each
// product's tariffs (with their rates) replaced as a whole. It is refused,
// with nothing written, when a tariff code belongs to another product, or
// when the result would leave an agreement of a supplier that requires
// products (staged or created) without a valid tariff.
func (db *DB) UpsertProducts(ctx context.Context, ps []dataimport.Product) ([]ProductResult, error) {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("upsert products: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	// One writer of the catalogue at a time, so the in-use check below
	// sees every other update's result.
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('dataimport_products'))`); err != nil {
		return nil, fmt.Errorf("upsert products: %w", err)
	}
	if err := tariffCodesFree(ctx, tx, ps); err != nil {
		return nil, err
	}
	out := make([]ProductResult, len(ps))
	var touchedTariffs, touchedProducts []string
	owner := map[string]int{} // every touched code → its product's index in ps
	for i := range ps {
		p := &ps[i]
		var id int64
		var created bool
		err := tx.QueryRowContext(ctx, `
			INSERT INTO products (code, full_name, display_name, available_from, available_to, is_variable, is_green, is_prepay, is_business)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (code) DO UPDATE SET full_name = EXCLUDED.full_name, display_name = EXCLUDED.display_name,
			       available_from = EXCLUDED.available_from, available_to = EXCLUDED.available_to, is_variable = EXCLUDED.is_variable,
			       is_green = EXCLUDED.is_green, is_prepay = EXCLUDED.is_prepay, is_business = EXCLUDED.is_business, updated_at = now()
			RETURNING id, xmax = 0`,
			p.Code, p.FullName, p.DisplayName, p.AvailableFrom.Time(), dateTime(p.AvailableTo),
			p.IsVariable, p.IsGreen, p.IsPrepay, p.IsBusiness).Scan(&id, &created)
		if err != nil {
			return nil, fmt.Errorf("upsert product %q: %w", p.Code, err)
		}
		out[i] = ProductResult{Code: p.Code, Created: created}
		touchedProducts = append(touchedProducts, p.Code)
		owner[p.Code] = i
		// The tariffs it had (an agreement may name one this update drops).
		rows, err := tx.QueryContext(ctx, `DELETE FROM tariffs WHERE product_id = $1 RETURNING tariff_code`, id)
		if err != nil {
			return nil, fmt.Errorf("replace tariffs of %q: %w", p.Code, err)
		}
		for rows.Next() {
			var code string
			if err := rows.Scan(&code); err != nil {
				rows.Close()
				return nil, fmt.Errorf("replace tariffs of %q: %w", p.Code, err)
			}
			touchedTariffs = append(touchedTariffs, code)
			owner[code] = i
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("replace tariffs of %q: %w", p.Code, err)
		}
		for _, t := range p.Tariffs {
			touchedTariffs = append(touchedTariffs, t.TariffCode)
			owner[t.TariffCode] = i
			if err := insertTariff(ctx, tx, id, &t); err != nil {
				return nil, fmt.Errorf("insert tariff %q: %w", t.TariffCode, err)
			}
		}
	}
	if err := catalogueStillValid(ctx, tx, touchedTariffs, touchedProducts, owner); err != nil {
		return nil, err
	}
	created, updated := []string{}, []string{}
	for _, r := range out {
		if r.Created {
			created = append(created, r.Code)
		} else {
			updated = append(updated, r.Code)
		}
	}
	if err := auditSQL(ctx, tx, AuditProductsUpsert, "products", nil, map[string][]string{"created": created, "updated": updated}); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("upsert products: %w", err)
	}
	return out, nil
}

func insertTariff(ctx context.Context, tx *sql.Tx, productID int64, t *dataimport.Tariff) error {
	var id int64
	if err := tx.QueryRowContext(ctx, `INSERT INTO tariffs (product_id, tariff_code, fuel, region, payment_method)
		VALUES ($1, $2, $3, $4, $5) RETURNING id`, productID, t.TariffCode, string(t.Fuel), t.Region, t.PaymentMethod).Scan(&id); err != nil {
		return err
	}
	for _, r := range t.UnitRates {
		if _, err := tx.ExecContext(ctx, `INSERT INTO unit_rates (tariff_id, rate_type, value, valid_from, valid_to) VALUES ($1, $2, $3, $4, $5)`,
			id, r.RateType, r.Value, r.ValidFrom.Time(), dateTime(r.ValidTo)); err != nil {
			return err
		}
	}
	for _, s := range t.StandingCharges {
		if _, err := tx.ExecContext(ctx, `INSERT INTO standing_charges (tariff_id, value, valid_from, valid_to) VALUES ($1, $2, $3, $4)`,
			id, s.Value, s.ValidFrom.Time(), dateTime(s.ValidTo)); err != nil {
			return err
		}
	}
	return nil
}

// tariffCodesFree refuses tariff codes that another product owns: a tariff
// code names one tariff across the instance.
func tariffCodesFree(ctx context.Context, tx *sql.Tx, ps []dataimport.Product) error {
	var errs []dataimport.FieldError
	for i := range ps {
		for k, t := range ps[i].Tariffs {
			var owner string
			err := tx.QueryRowContext(ctx, `SELECT p.code FROM tariffs t JOIN products p ON p.id = t.product_id
				WHERE t.tariff_code = $1 AND p.code <> $2`, t.TariffCode, ps[i].Code).Scan(&owner)
			switch {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				return fmt.Errorf("check tariff codes: %w", err)
			default:
				errs = append(errs, dataimport.FieldError{Attr: fmt.Sprintf("products.%d.tariffs.%d.tariff_code", i, k), Code: dataimport.CodeTariffCodeTaken,
					Detail: fmt.Sprintf("Tariff %q belongs to product %q.", t.TariffCode, owner)})
			}
		}
	}
	if len(errs) > 0 {
		return dataimport.ValidationError(dataimport.CodeInvalidPayload, "Products failed validation.", dataimport.JoinFieldErrors(errs))
	}
	return nil
}

// agreementRefs is every agreement the catalogue must keep valid: those of
// staged (not yet created) accounts, read from their latest staged payload,
// and those of created accounts, of suppliers that require products.
const agreementRefs = `
WITH refs AS (
	SELECT s.code AS supplier, p.external_account_number AS account,
	       NULLIF(ag->>'tariff_code', '') AS tariff_code, NULLIF(ag->>'product_code', '') AS product_code,
	       (ag->>'valid_from')::date AS valid_from, mp->>'fuel' AS fuel
	  FROM import_processes p
	  JOIN import_suppliers s ON s.id = p.supplier_id AND s.require_products
	  JOIN import_process_versions v ON v.process_id = p.id AND v.version = p.staged_version
	  CROSS JOIN LATERAL jsonb_array_elements(COALESCE(v.payload->'supply_addresses', '[]')) sa
	  CROSS JOIN LATERAL jsonb_array_elements(COALESCE(sa->'meter_points', '[]')) mp
	  CROSS JOIN LATERAL jsonb_array_elements(COALESCE(mp->'agreements', '[]')) ag
	 WHERE p.platform_account_number IS NULL
	UNION ALL
	SELECT s.code, acc.external_account_number, NULLIF(a.tariff_code, ''), NULLIF(a.product_code, ''), a.valid_from, m.fuel
	  FROM agreements a
	  JOIN meter_points m ON m.id = a.meter_point_id
	  JOIN accounts acc ON acc.id = m.account_id
	  JOIN import_suppliers s ON s.id = acc.supplier_id AND s.require_products
)
SELECT DISTINCT r.supplier, r.account, COALESCE(r.tariff_code, r.product_code), r.tariff_code IS NOT NULL
  FROM refs r
 WHERE (r.tariff_code = ANY($1) AND NOT EXISTS (
		SELECT 1 FROM tariffs t JOIN products pr ON pr.id = t.product_id
		 WHERE t.tariff_code = r.tariff_code AND t.fuel = r.fuel
		   AND pr.available_from <= r.valid_from AND (pr.available_to IS NULL OR r.valid_from <= pr.available_to)))
    OR (r.tariff_code IS NULL AND r.product_code = ANY($2) AND NOT EXISTS (
		SELECT 1 FROM products pr JOIN tariffs t ON t.product_id = pr.id
		 WHERE pr.code = r.product_code AND t.fuel = r.fuel
		   AND pr.available_from <= r.valid_from AND (pr.available_to IS NULL OR r.valid_from <= pr.available_to)))
 ORDER BY 1, 2, 3
 LIMIT 100`

// catalogueStillValid refuses the update (product_in_use) when an
// agreement naming one of the touched codes no longer finds a tariff of
// its fuel available on its valid_from.
func catalogueStillValid(ctx context.Context, tx *sql.Tx, tariffs, products []string, owner map[string]int) error {
	rows, err := tx.QueryContext(ctx, agreementRefs, tariffs, products)
	if err != nil {
		return fmt.Errorf("check agreements against the catalogue: %w", err)
	}
	defer rows.Close()
	var errs []dataimport.FieldError
	for rows.Next() {
		var supplier, account, code string
		var isTariff bool
		if err := rows.Scan(&supplier, &account, &code, &isTariff); err != nil {
			return fmt.Errorf("check agreements against the catalogue: %w", err)
		}
		kind := "product"
		if isTariff {
			kind = "tariff"
		}
		attr := dataimport.CodeNonFieldErrors
		if i, ok := owner[code]; ok {
			attr = fmt.Sprintf("products.%d.code", i)
		}
		errs = append(errs, dataimport.FieldError{Attr: attr, Code: dataimport.CodeProductInUse, Detail: fmt.Sprintf(
			"Account %q of supplier %q has an agreement on %s %q that this update would leave without a valid tariff (removed, another fuel, or not available on its valid_from).",
			account, supplier, kind, code)})
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check agreements against the catalogue: %w", err)
	}
	if len(errs) > 0 {
		return dataimport.ValidationError(dataimport.CodeProductInUse,
			"The update would leave existing agreements without a valid tariff; nothing was changed.", errs)
	}
	return nil
}

// productJSON renders a product as the API returns it, in SQL, so that a
// list streams row by row. Rates keep their four places ("24.5000").
const productJSON = `
SELECT p.code, jsonb_build_object(
	'code', p.code, 'full_name', p.full_name, 'display_name', p.display_name,
	'available_from', p.available_from, 'available_to', p.available_to,
	'is_variable', p.is_variable, 'is_green', p.is_green, 'is_prepay', p.is_prepay, 'is_business', p.is_business,
	'tariffs', COALESCE((
		SELECT jsonb_agg(jsonb_build_object(
			'tariff_code', t.tariff_code, 'fuel', t.fuel, 'region', t.region, 'payment_method', t.payment_method,
			'unit_rates', COALESCE((SELECT jsonb_agg(jsonb_build_object('rate_type', u.rate_type, 'value', u.value::text,
				'valid_from', u.valid_from, 'valid_to', u.valid_to) ORDER BY u.rate_type, u.valid_from) FROM unit_rates u WHERE u.tariff_id = t.id), '[]'),
			'standing_charges', COALESCE((SELECT jsonb_agg(jsonb_build_object('value', s.value::text,
				'valid_from', s.valid_from, 'valid_to', s.valid_to) ORDER BY s.valid_from) FROM standing_charges s WHERE s.tariff_id = t.id), '[]')
		) ORDER BY t.tariff_code) FROM tariffs t WHERE t.product_id = p.id), '[]'))::text
  FROM products p`

// EachProduct calls fn with every product's JSON, ordered by code, reading
// row by row (constant memory for any catalogue).
func (db *DB) EachProduct(ctx context.Context, fn func(code string, product []byte) error) error {
	rows, err := db.readSQL.QueryContext(ctx, productJSON+` ORDER BY p.code`)
	if err != nil {
		return fmt.Errorf("list products: %w", err)
	}
	defer rows.Close()
	var code string
	var body []byte
	for rows.Next() {
		if err := rows.Scan(&code, &body); err != nil {
			return fmt.Errorf("list products: %w", err)
		}
		if err := fn(code, body); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list products: %w", err)
	}
	return nil
}

// ProductJSON is one product as the API returns it; not_found if absent.
func (db *DB) ProductJSON(ctx context.Context, code string) ([]byte, error) {
	var c string
	var body []byte
	err := db.readSQL.QueryRowContext(ctx, productJSON+` WHERE p.code = $1`, code).Scan(&c, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, dataimport.Errorf(dataimport.CodeNotFound, "Product %q does not exist.", code)
	}
	if err != nil {
		return nil, fmt.Errorf("load product %q: %w", code, err)
	}
	return body, nil
}

// Catalogue loads the tariffs and products an account names.
func (db *DB) Catalogue(ctx context.Context, tariffs, products []string) (dataimport.Catalogue, error) {
	cat := dataimport.Catalogue{Tariffs: map[string]dataimport.CatalogueTariff{}, Products: map[string]dataimport.CatalogueProduct{}}
	if len(tariffs) == 0 && len(products) == 0 {
		return cat, nil
	}
	rows, err := db.sql.QueryContext(ctx, `
		SELECT t.tariff_code, t.fuel, p.code, p.available_from, p.available_to,
		       (SELECT string_agg(DISTINCT f.fuel, ',') FROM tariffs f WHERE f.product_id = p.id)
		  FROM products p LEFT JOIN tariffs t ON t.product_id = p.id AND t.tariff_code = ANY($1)
		 WHERE t.id IS NOT NULL OR p.code = ANY($2)`, tariffs, products)
	if err != nil {
		return cat, fmt.Errorf("load catalogue: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var tariff, fuel, fuels sql.NullString
		var p dataimport.CatalogueProduct
		var from sql.NullTime
		var to sql.NullTime
		if err := rows.Scan(&tariff, &fuel, &p.Code, &from, &to, &fuels); err != nil {
			return cat, fmt.Errorf("load catalogue: %w", err)
		}
		p.AvailableFrom = dataimport.DateOf(from.Time)
		if to.Valid {
			d := dataimport.DateOf(to.Time)
			p.AvailableTo = &d
		}
		for _, f := range strings.Split(fuels.String, ",") {
			if f != "" {
				p.Fuels = append(p.Fuels, dataimport.Fuel(f))
			}
		}
		cat.Products[p.Code] = p
		if tariff.Valid {
			cat.Tariffs[tariff.String] = dataimport.CatalogueTariff{Fuel: dataimport.Fuel(fuel.String), Product: p}
		}
	}
	if err := rows.Err(); err != nil {
		return cat, fmt.Errorf("load catalogue: %w", err)
	}
	return cat, nil
}

// CheckAccountCatalogue is the one place an account meets the catalogue
// (validate, stage, v2 validate and create, and the worker's
// re-validation): after pure validation, for a supplier that requires
// products. It returns the account_failed_validation error, or nil.
func (db *DB) CheckAccountCatalogue(ctx context.Context, sup dataimport.Supplier, a *dataimport.Account) error {
	if !sup.RequireProducts {
		return nil
	}
	return dataimport.CheckAccountCatalogue(a, db.CatalogueFunc(ctx))
}

// CatalogueFunc is Catalogue bound to ctx, for dataimport.AccountRules.
func (db *DB) CatalogueFunc(ctx context.Context) dataimport.CatalogueFunc {
	return func(tariffs, products []string) (dataimport.Catalogue, error) {
		return db.Catalogue(ctx, tariffs, products)
	}
}

// CheckTransactionsCatalogue is the transactions endpoint's check of
// SUPPLY_CHARGE product codes, for a supplier that requires products.
func (db *DB) CheckTransactionsCatalogue(ctx context.Context, sup dataimport.Supplier, txs []dataimport.Transaction) error {
	if !sup.RequireProducts {
		return nil
	}
	cat, err := db.Catalogue(ctx, nil, dataimport.TransactionProductCodes(txs))
	if err != nil {
		return err
	}
	if errs := dataimport.CheckTransactionProducts(txs, "transactions", cat); len(errs) > 0 {
		return dataimport.ValidationError(dataimport.CodeInvalidPayload, "The request body is invalid.", errs)
	}
	return nil
}
