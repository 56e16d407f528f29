package postgres

import (
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// registerUUID makes pgx send and read uuid.UUID as the 16 bytes it is.
// Without it pgx finds uuid.UUID's driver.Valuer and sends every id as its
// 36-character text (the server parses it back), and scans through
// sql.Scanner the same way: for the arrays of ids in the claim and result
// statements that was a large share of the scheduler's CPU in a burst.
//
// Sending goes through an encode-plan wrapper (pgx tries those before
// driver.Valuer); reading needs the uuid codec itself, since pgx prefers
// sql.Scanner to any scan-plan wrapper, so uuid and uuid[] are registered
// again with a codec that knows *uuid.UUID.
func registerUUID(m *pgtype.Map) {
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{tryWrapUUIDEncodePlan}, m.TryWrapEncodePlanFuncs...)
	t := &pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: uuidCodec{}}
	m.RegisterType(t)
	m.RegisterType(&pgtype.Type{Name: "_uuid", OID: pgtype.UUIDArrayOID, Codec: &pgtype.ArrayCodec{ElementType: t}})
}

// uuidCodec is pgx's UUID codec, scanning into *uuid.UUID directly.
type uuidCodec struct{ pgtype.UUIDCodec }

func (c uuidCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*uuid.UUID); ok {
		if next := c.UUIDCodec.PlanScan(m, oid, format, (*pgUUID)(nil)); next != nil {
			return &uuidScanPlan{next: next}
		}
	}
	return c.UUIDCodec.PlanScan(m, oid, format, target)
}

// pgUUID is a uuid.UUID as pgx's UUID codec takes and gives it.
type pgUUID uuid.UUID

func (u pgUUID) UUIDValue() (pgtype.UUID, error) {
	return pgtype.UUID{Bytes: u, Valid: true}, nil
}

func (u *pgUUID) ScanUUID(v pgtype.UUID) error {
	if !v.Valid {
		return errors.New("cannot scan NULL into uuid.UUID")
	}
	*u = pgUUID(v.Bytes)
	return nil
}

func tryWrapUUIDEncodePlan(value any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	if u, ok := value.(uuid.UUID); ok {
		return &uuidEncodePlan{}, pgUUID(u), true
	}
	return nil, nil, false
}

type uuidEncodePlan struct{ next pgtype.EncodePlan }

func (p *uuidEncodePlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *uuidEncodePlan) Encode(value any, buf []byte) ([]byte, error) {
	return p.next.Encode(pgUUID(value.(uuid.UUID)), buf)
}

type uuidScanPlan struct{ next pgtype.ScanPlan }

func (p *uuidScanPlan) Scan(src []byte, target any) error {
	return p.next.Scan(src, (*pgUUID)(target.(*uuid.UUID)))
}
