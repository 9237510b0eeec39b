package postgres

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/storable"
)

type paymentRow struct {
	ID            int64     `gorm:"column:id"`
	AccountID     int64     `gorm:"column:account_id"`
	Vendor        string    `gorm:"column:vendor"`
	Reference     string    `gorm:"column:reference"`
	Type          string    `gorm:"column:type"`
	Status        string    `gorm:"column:status"`
	CardBrand     *string   `gorm:"column:card_brand"`
	CardLast4     *string   `gorm:"column:card_last4"`
	CardExpMonth  *int      `gorm:"column:card_exp_month"`
	CardExpYear   *int      `gorm:"column:card_exp_year"`
	MandateStatus *string   `gorm:"column:mandate_status"`
	CreatedAt     time.Time `gorm:"column:created_at"`
}

const paymentCols = `id, account_id, vendor, reference, type, status, card_brand, card_last4,
	card_exp_month, card_exp_year, mandate_status, created_at`

func (r paymentRow) domain() dataimport.PaymentInstruction {
	return dataimport.PaymentInstruction{
		ID: r.ID, AccountID: r.AccountID, Vendor: r.Vendor, Reference: r.Reference,
		Type: dataimport.PaymentInstructionType(r.Type), Status: r.Status, CreatedAt: r.CreatedAt,
		Details: dataimport.PaymentDetails{CardBrand: paymentValue(r.CardBrand), CardLast4: paymentValue(r.CardLast4),
			CardExpMonth: paymentValue(r.CardExpMonth), CardExpYear: paymentValue(r.CardExpYear), MandateStatus: paymentValue(r.MandateStatus)},
	}
}

// paymentValue reads a nullable column; NULL is the zero value.
func paymentValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// nullIfZero stores "no such detail" as NULL rather than "" or 0.
func nullIfZero[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// ActivePaymentInstruction returns the account's active instruction, if any.
func (db *DB) ActivePaymentInstruction(ctx context.Context, accountID int64) (dataimport.PaymentInstruction, bool, error) {
	var rows []paymentRow
	err := db.gorm.WithContext(ctx).Raw(`SELECT `+paymentCols+` FROM payment_instructions
		WHERE account_id = ? AND status = 'ACTIVE'`, accountID).Scan(&rows).Error
	if err != nil {
		return dataimport.PaymentInstruction{}, false, fmt.Errorf("active payment instruction: %w", err)
	}
	if len(rows) == 0 {
		return dataimport.PaymentInstruction{}, false, nil
	}
	return rows[0].domain(), true, nil
}

// AddPaymentInstruction stores pi (vendor-verified) as the account's active
// instruction. created is false, with a nil error, when the same
// instruction (vendor, reference, type) is already active: a retry. Another
// active instruction is refused with account_already_has_active_instruction.
// The account's timeline records the request (count 0 for a retry).
//
// The unique (account, vendor, reference) key and the one-active-per-account
// index decide every race: the insert does nothing on either conflict, and
// the row that won is read back to say which case this is.
func (db *DB) AddPaymentInstruction(ctx context.Context, pi dataimport.PaymentInstruction) (dataimport.PaymentInstruction, bool, error) {
	d := storableDetails(pi.Details)
	var out, conflict dataimport.PaymentInstruction // conflict: the row a refusal is about
	created := false
	err := db.postImport(ctx, pi.AccountID, RequestPaymentInstruction, func(tx *gorm.DB, _ lockedAccount) (map[string]any, error) {
		for range 3 {
			var rows []paymentRow
			err := tx.Raw(`INSERT INTO payment_instructions (account_id, vendor, reference, type, status,
					card_brand, card_last4, card_exp_month, card_exp_year, mandate_status)
				VALUES (?, ?, ?, ?, 'ACTIVE', ?, ?, ?, ?, ?)
				ON CONFLICT DO NOTHING
				RETURNING `+paymentCols,
				pi.AccountID, pi.Vendor, pi.Reference, string(pi.Type),
				nullIfZero(d.CardBrand), nullIfZero(d.CardLast4), nullIfZero(d.CardExpMonth), nullIfZero(d.CardExpYear),
				nullIfZero(d.MandateStatus)).Scan(&rows).Error
			if err != nil {
				return nil, fmt.Errorf("add payment instruction: %w", err)
			}
			if len(rows) == 1 {
				out, created = rows[0].domain(), true
				return PaymentEventData(out, 1), nil
			}
			// A conflict: the same reference, or another active instruction.
			var existing []paymentRow
			err = tx.Raw(`SELECT `+paymentCols+` FROM payment_instructions
				WHERE account_id = ? AND (status = 'ACTIVE' OR (vendor = ? AND reference = ?))`,
				pi.AccountID, pi.Vendor, pi.Reference).Scan(&existing).Error
			if err != nil {
				return nil, fmt.Errorf("add payment instruction: %w", err)
			}
			for _, r := range existing {
				e := r.domain()
				switch {
				case e.Status == dataimport.PaymentInstructionActive && e.SameAs(pi):
					out = e
					return PaymentEventData(e, 0), nil
				case e.Status == dataimport.PaymentInstructionActive:
					conflict = e
					return nil, dataimport.ErrAccountHasActiveInstruction(e)
				}
			}
			for _, r := range existing {
				if r.Vendor == pi.Vendor && r.Reference == pi.Reference {
					conflict = r.domain()
					return nil, dataimport.Errorf(dataimport.CodePaymentInstructionDeactivated,
						"Payment instruction %s %s was deactivated on this account; it cannot be added again.", pi.Vendor, pi.Reference)
				}
			}
			// The conflicting row went away between the two statements: try again.
		}
		return nil, fmt.Errorf("add payment instruction: conflicting rows kept changing")
	})
	if err != nil {
		return conflict, false, err
	}
	return out, created, nil
}

// PaymentEventData is the timeline data of a payment-instruction request
// that added count instructions (0: it was already the active one).
func PaymentEventData(pi dataimport.PaymentInstruction, count int) map[string]any {
	return map[string]any{"count": count, "vendor": pi.Vendor, "reference": pi.Reference, "type": pi.Type}
}

// vendorTextMax bounds each vendor-given text of an instruction.
const vendorTextMax = 200

// storableDetails is d with the vendor's texts cleaned by pkg/storable: they
// are the payment vendor's answer, not validated partner input.
func storableDetails(d dataimport.PaymentDetails) dataimport.PaymentDetails {
	d.CardBrand = storable.Text(d.CardBrand, vendorTextMax)
	d.CardLast4 = storable.Text(d.CardLast4, vendorTextMax)
	d.MandateStatus = storable.Text(d.MandateStatus, vendorTextMax)
	return d
}
