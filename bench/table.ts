/** The benchmarks' tables: columns padded to their widest cell, a rule under the header row. */
export function printColumns(rows: string[][]): void {
  const width = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  for (const [i, row] of rows.entries()) {
    console.log(
      row
        .map((c, j) => c.padEnd(width[j]!))
        .join('  ')
        .trimEnd(),
    );
    if (i === 0) console.log(width.map((w) => '-'.repeat(w)).join('  '));
  }
}
