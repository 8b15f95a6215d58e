/** Human tables by default, JSON with --json. */

export type Column<T> = [header: string, value: (row: T) => unknown];

const text = (v: unknown): string => (v === null || v === undefined ? '-' : Array.isArray(v) ? v.join(',') : String(v));

export function table<T>(rows: T[], columns: Column<T>[]): string {
  const cells = rows.map((r) => columns.map(([, get]) => text(get(r))));
  const widths = columns.map(([h], i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns.map(([h]) => h.toUpperCase())), ...cells.map(line)].join('\n');
}

export function record(obj: Record<string, unknown>): string {
  const width = Math.max(...Object.keys(obj).map((k) => k.length));
  return Object.entries(obj)
    .map(([k, v]) => `${k.padEnd(width)}  ${typeof v === 'object' && v !== null && !Array.isArray(v) ? JSON.stringify(v) : text(v)}`)
    .join('\n');
}

export const out = (line: string) => process.stdout.write(line + '\n');
export const err = (line: string) => process.stderr.write(line + '\n');
