// A tool call's arguments as a person reads them before approving: every key with its whole value,
// never a cut JSON string. Text wraps (its line breaks kept); an object is a nested key/value list
// and a list a bulleted one, so a nested value reads like the rest; past a few levels, indented JSON.

const MAX_DEPTH = 4;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function Value({ value, depth }: { value: unknown; depth: number }) {
  if (typeof value === 'string') {
    return value === '' ? <span className="arg-empty">(empty text)</span> : <span className="arg-text">{value}</span>;
  }
  if (value === null || value === undefined || typeof value !== 'object') {
    return <code className="arg-scalar">{value === undefined ? 'undefined' : JSON.stringify(value)}</code>;
  }
  if (depth >= MAX_DEPTH) return <pre className="arg-json">{JSON.stringify(value, null, 2)}</pre>;
  if (Array.isArray(value)) {
    if (value.length === 0) return <span className="arg-empty">(empty list)</span>;
    return (
      <ul className="arg-list">
        {value.map((item, index) => (
          <li key={index}>
            <Value value={item} depth={depth + 1} />
          </li>
        ))}
      </ul>
    );
  }
  return <Fields record={value as Record<string, unknown>} depth={depth + 1} />;
}

function Fields({ record, depth }: { record: Record<string, unknown>; depth: number }) {
  const entries = Object.entries(record);
  if (entries.length === 0) return <span className="arg-empty">(no fields)</span>;
  return (
    <dl className="arg-fields">
      {entries.map(([key, value]) => (
        <div className="arg" key={key} data-testid="approval-arg" data-arg-key={key}>
          <dt>{key}</dt>
          <dd>
            <Value value={value} depth={depth} />
          </dd>
        </div>
      ))}
    </dl>
  );
}

/** The arguments of a tool call: a key/value list for an object, else the value itself. */
export function ToolArguments({ input }: { input: unknown }) {
  return (
    <div className="tool-arguments" data-testid="approval-args">
      {isRecord(input) ? <Fields record={input} depth={0} /> : <Value value={input} depth={0} />}
    </div>
  );
}
