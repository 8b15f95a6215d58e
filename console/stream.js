/** The live stream: polls GET /events after the cursor saved in this tab, newest first on screen. */
import { api } from './api.js';
import { act, clearMessages, showError } from './messages.js';
import { state } from './state.js';
import { $, h, when } from './views.js';

const CURSOR_ITEM = 'webhookConsole.streamCursor';
const STREAM_KEEP = 100;
let streamTimer;

async function pollStream() {
  let cursor = sessionStorage.getItem(CURSOR_ITEM) ?? '0';
  // Catch up a bounded number of pages per tick, so a long backlog cannot monopolise the rate limit.
  for (let pages = 0; pages < 10 && state.streaming; pages++) {
    const page = await api.listEvents({ after: cursor, limit: 100 });
    const list = $('stream');
    for (const item of page.data) {
      list.prepend(
        h(
          'li',
          { value: item.cursor, dataset: { cursor: item.cursor, type: item.type } },
          h('button', { type: 'button', class: 'link', title: 'GET /events/{id}' }, `#${item.cursor} ${item.type}`),
          ` · ${item.environment} · ${when(item.created_at)} · ${item.id}`,
        ),
      );
      list.firstElementChild.querySelector('button').addEventListener('click', (ev) => act(ev.currentTarget, () => showEvent(item.id)));
    }
    while (list.children.length > STREAM_KEEP) list.lastElementChild.remove();
    cursor = page.paging.cursor;
    sessionStorage.setItem(CURSOR_ITEM, cursor);
    $('stream-cursor').textContent = `cursor ${cursor}`;
    if (!page.paging.has_more) break;
  }
}

async function showEvent(id) {
  const e = (await api.getEvent(id)).data;
  const close = h('button', { type: 'button' }, 'Close');
  close.addEventListener('click', () => $('event-detail').replaceChildren());
  $('event-detail').replaceChildren(
    h('div', { class: 'bar' }, h('h3', {}, `Event ${e.id}`), close),
    h('p', { class: 'muted' }, `#${e.cursor} ${e.type} · ${e.environment} · ${when(e.created_at)}`),
    h('pre', { id: 'event-json', dataset: { eventId: e.id } }, JSON.stringify(e, null, 2)),
  );
}

async function streamTick() {
  try {
    await pollStream();
  } catch (e) {
    showError(e);
    stopStream();
    return;
  }
  if (state.streaming) streamTimer = setTimeout(streamTick, 2000);
}

export function stopStream() {
  state.streaming = false;
  clearTimeout(streamTimer);
  $('stream-toggle').textContent = 'Start';
}

export function wireStream() {
  $('stream-toggle').addEventListener('click', () => {
    if (state.streaming) return stopStream();
    clearMessages();
    state.streaming = true;
    $('stream-toggle').textContent = 'Stop';
    void streamTick();
  });
}
