/** The 24-hour chart of an endpoint: one stacked bar per hour, drawn by hand in SVG. */
const SVG = 'http://www.w3.org/2000/svg';
const BAR = 10;
const GAP = 2;
const HEIGHT = 48;

function el(name, attrs, text) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** `hours`: the stats route's `[{ hour, successes, failures }]`, oldest first. */
export function outcomeChart(hours) {
  const width = hours.length * (BAR + GAP);
  const svg = el('svg', { class: 'chart', width, height: HEIGHT + 12, viewBox: `0 0 ${width} ${HEIGHT + 12}`, role: 'img' });
  const ok = hours.reduce((n, h) => n + h.successes, 0);
  const bad = hours.reduce((n, h) => n + h.failures, 0);
  svg.setAttribute('aria-label', `last 24 hours: ${ok} successful attempts, ${bad} failed`);
  svg.dataset.successes = String(ok);
  svg.dataset.failures = String(bad);
  const max = Math.max(1, ...hours.map((h) => h.successes + h.failures));
  hours.forEach((h, i) => {
    const x = i * (BAR + GAP);
    const g = el('g', {});
    const label = new Date(h.hour).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
    g.append(el('title', {}, `${label}: ${h.successes} ok, ${h.failures} failed`));
    const okH = Math.round((h.successes / max) * HEIGHT);
    const badH = Math.round((h.failures / max) * HEIGHT);
    if (okH + badH === 0) g.append(el('rect', { class: 'empty', x, y: HEIGHT - 1, width: BAR, height: 1 }));
    if (okH) g.append(el('rect', { class: 'ok', x, y: HEIGHT - okH, width: BAR, height: okH }));
    // At least a pixel for any failure: one failed attempt among hundreds must still show.
    if (h.failures) g.append(el('rect', { class: 'bad', x, y: HEIGHT - okH - Math.max(1, badH), width: BAR, height: Math.max(1, badH) }));
    svg.append(g);
  });
  svg.append(el('text', { x: 0, y: HEIGHT + 10 }, '24 h ago'));
  svg.append(el('text', { x: width, y: HEIGHT + 10, 'text-anchor': 'end' }, 'now'));
  return svg;
}
