package postgres

import (
	"encoding/json"

	"github.com/jackc/pgx/v5/pgtype"
)

// registerJSON makes pgx read json and jsonb into a json.RawMessage as a
// copy of the server's text. pgx's codecs run every value through
// json.Unmarshal, which for a RawMessage only validates and copies: the
// server has validated it already, and for the payloads a claim reads
// that was a visible share of the scheduler's CPU. Every other target is
// still unmarshalled by encoding/json.
func registerJSON(m *pgtype.Map) {
	m.RegisterType(&pgtype.Type{Name: "json", OID: pgtype.JSONOID,
		Codec: &pgtype.JSONCodec{Marshal: json.Marshal, Unmarshal: unmarshalJSON}})
	m.RegisterType(&pgtype.Type{Name: "jsonb", OID: pgtype.JSONBOID,
		Codec: &pgtype.JSONBCodec{Marshal: json.Marshal, Unmarshal: unmarshalJSON}})
}

// unmarshalJSON is json.Unmarshal, except that a *json.RawMessage gets a
// copy of data as it is.
func unmarshalJSON(data []byte, v any) error {
	if raw, ok := v.(*json.RawMessage); ok {
		*raw = append(json.RawMessage(nil), data...)
		return nil
	}
	return json.Unmarshal(data, v)
}
