/**
 * The tenant console: endpoints with their health and 24-hour chart, an endpoint's deliveries
 * and attempts, test / pause / reactivate / resend / recover, and the live stream. State is
 * the API's: every action calls it and shows its answer, errors included, then reloads.
 * This module signs in and out, wires the panels together and keeps them fresh.
 */
import { session } from './api.js';
import { loadDeliveries, selectEndpoint, wireDeliveries } from './deliveries.js';
import { CHART_MAX_AGE_MS, loadEndpoints, renderEndpoints, wireEndpoints } from './endpoints.js';
import { act, clearMessages, showError, whenUnauthorized } from './messages.js';
import { state } from './state.js';
import { stopStream, wireStream } from './stream.js';
import { $ } from './views.js';

// ---- sign in / out

function showSignedIn(yes) {
  $('signin').hidden = yes;
  $('app').hidden = !yes;
  $('sign-out').hidden = !yes;
  $('who').textContent = yes ? 'signed in (key kept in this tab only)' : '';
}

function signOut(clearError = true) {
  stopStream();
  session.signOut();
  state.selected = undefined;
  $('endpoints').replaceChildren();
  $('deliveries-panel').hidden = true;
  $('stream').replaceChildren();
  if (clearError) clearMessages();
  showSignedIn(false);
}

$('signin-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const input = $('api-key');
  const key = input.value.trim();
  input.value = '';
  if (!key) return;
  session.signIn(key);
  showSignedIn(true);
  void act(null, loadEndpoints);
});
$('sign-out').addEventListener('click', () => signOut());

// ---- refresh: the API is the state; a quiet reload every few seconds shows deliveries arriving

async function refreshAll() {
  await loadEndpoints();
  if (state.selected) {
    state.selected = state.endpoints.find((e) => e.id === state.selected.id) ?? state.selected;
    await loadDeliveries();
  }
}

setInterval(() => {
  if (!session.key() || document.hidden) return;
  // Only the first page refreshes on its own: a reader paging back keeps the rows in view.
  if (state.selected && !state.page.after && !state.page.before) loadDeliveries().catch(showError);
}, 3000);
setInterval(() => {
  if (session.key() && !document.hidden) loadEndpoints(CHART_MAX_AGE_MS).catch(showError);
}, 10000);

wireEndpoints({ open: selectEndpoint, refresh: refreshAll });
wireDeliveries({ renderEndpoints, refresh: refreshAll });
wireStream();
whenUnauthorized(() => signOut(false));

if (session.key()) {
  showSignedIn(true);
  void act(null, loadEndpoints);
} else showSignedIn(false);
