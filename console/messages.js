/** The error and notice lines: every API error is shown as its code and message, never swallowed. */
import { $ } from './views.js';

let onUnauthorized = () => {};

/** What to do when the API says the key is no good (401): the app signs out. */
export function whenUnauthorized(fn) {
  onUnauthorized = fn;
}

export function showError(e) {
  const box = $('error');
  box.textContent = e && e.code ? `${e.code}: ${e.message}${e.status ? ` (HTTP ${e.status})` : ''}` : `error: ${e}`;
  box.hidden = false;
  if (e && e.status === 401) onUnauthorized();
}

export function notice(text) {
  $('notice').textContent = text;
  $('notice').hidden = false;
}

export function clearMessages() {
  for (const id of ['error', 'notice']) {
    $(id).hidden = true;
    $(id).textContent = '';
  }
}

/** A user action: clears the last message, shows the API's error if any, keeps the button busy meanwhile. */
export async function act(button, fn) {
  clearMessages();
  if (button) button.disabled = true;
  try {
    await fn();
  } catch (e) {
    showError(e);
  } finally {
    if (button) button.disabled = false;
  }
}
