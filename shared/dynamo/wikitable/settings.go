package wikitable

import (
	"context"
	"encoding/json"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/integration"
)

// SettingsStore keeps the tenant's wiki admin settings in the WikiTable
// (pk T#t#SETTINGS, sk SETTINGS). The search reads IsolateSpaces with Get.
type SettingsStore struct {
	db    dynamo.API
	table string
}

var _ integration.SettingsStore = (*SettingsStore)(nil)

// NewSettingsStore returns a SettingsStore on table.
func NewSettingsStore(db dynamo.API, table string) *SettingsStore {
	return &SettingsStore{db: db, table: table}
}

type settingsItem struct {
	PK            string `dynamodbav:"pk"`
	SK            string `dynamodbav:"sk"`
	IsolateSpaces bool   `dynamodbav:"isolateSpaces"`
	// SuspectFields is the JSON array of the setting, "" when never set
	// (the default applies).
	SuspectFields string `dynamodbav:"suspectFields,omitempty"`
	UpdatedAt     string `dynamodbav:"updatedAt"`
}

func settingsKey(tenant string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: dynamo.TenantPrefix(tenant) + "SETTINGS"},
		"sk": &types.AttributeValueMemberS{Value: "SETTINGS"},
	}
}

// Get returns the tenant's settings with one GetItem; the defaults
// (isolateSpaces false) when they were never set.
func (s *SettingsStore) Get(ctx context.Context, tenant string) (integration.Settings, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: settingsKey(tenant)})
	if err != nil {
		return integration.Settings{}, dynamo.Errorf("get settings", err)
	}
	if out.Item == nil {
		return integration.Settings{}, nil
	}
	var it settingsItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return integration.Settings{}, dynamo.Errorf("decode settings", err)
	}
	st := integration.Settings{IsolateSpaces: it.IsolateSpaces}
	if it.SuspectFields != "" {
		if err := json.Unmarshal([]byte(it.SuspectFields), &st.SuspectFields); err != nil {
			return integration.Settings{}, dynamo.Errorf("decode settings", err)
		}
		if st.SuspectFields == nil {
			st.SuspectFields = []string{}
		}
	}
	return st, nil
}

// Put stores the tenant's settings.
func (s *SettingsStore) Put(ctx context.Context, tenant string, st integration.Settings) error {
	it := settingsItem{
		PK: dynamo.TenantPrefix(tenant) + "SETTINGS", SK: "SETTINGS", IsolateSpaces: st.IsolateSpaces,
		UpdatedAt: dynamo.Time(time.Now()),
	}
	if st.SuspectFields != nil {
		b, _ := json.Marshal(st.SuspectFields)
		it.SuspectFields = string(b)
	}
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		return dynamo.Errorf("encode settings", err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: av})
	return dynamo.Translate(err, "put settings")
}

// SuspectFields returns the tenant's suspectFields (wiki.Store) with one
// GetItem.
func (s *SettingsStore) SuspectFields(ctx context.Context, tenant string) ([]string, error) {
	st, err := s.Get(ctx, tenant)
	if err != nil {
		return nil, err
	}
	return st.EffectiveSuspectFields(), nil
}
