// Small shared pieces: the html tag, loading and error states, labelled fields, confirmation dialogs.

import { useCallback, useEffect, useId, useRef, useState } from './vendor/hooks.js';
import htm from './vendor/htm.js';
import { h } from './vendor/preact.js';

export const html = htm.bind(h);

/** Loads with `load()` whenever `deps` change; `reload` runs it again. Older answers never overwrite newer. */
export function useLoad(load, deps) {
  const [state, setState] = useState({ loading: true, data: undefined, error: undefined });
  const generation = useRef(0);
  const run = useCallback(() => {
    const mine = ++generation.current;
    setState((s) => ({ ...s, loading: true, error: undefined }));
    load().then(
      (data) => mine === generation.current && setState({ loading: false, data, error: undefined }),
      (error) => mine === generation.current && setState({ loading: false, data: undefined, error }),
    );
  }, deps);
  useEffect(run, [run]);
  return { ...state, reload: run };
}

export function Loading({ what = 'Loading' }) {
  return html`<p class="loading" role="status">${what}…</p>`;
}

export function ErrorMessage({ error }) {
  if (!error) return null;
  return html`<p class="error" role="alert">${error.message ?? String(error)}</p>`;
}

export function Notice({ children }) {
  return html`<p class="notice" role="status">${children}</p>`;
}

/** A label, its control and the error about it, tied together for screen readers (and tests). */
export function Field({ label, error, hint, children }) {
  const id = useId();
  const errorId = `${id}-error`;
  const hintId = `${id}-hint`;
  const described = [hint ? hintId : null, error ? errorId : null].filter(Boolean).join(' ') || undefined;
  const control = children({ id, 'aria-describedby': described, 'aria-invalid': error ? 'true' : undefined });
  return html`<div class=${`field${error ? ' invalid' : ''}`}>
    <label for=${id}>${label}</label>
    ${control}
    ${hint ? html`<small id=${hintId} class="hint">${hint}</small>` : null}
    ${error ? html`<small id=${errorId} class="field-error">${error}</small>` : null}
  </div>`;
}

export function Checkbox({ label, checked, onChange, error }) {
  const id = useId();
  return html`<div class=${`field checkbox${error ? ' invalid' : ''}`}>
    <input id=${id} type="checkbox" checked=${checked} onChange=${(e) => onChange(e.currentTarget.checked)} />
    <label for=${id}>${label}</label>
    ${error ? html`<small class="field-error">${error}</small>` : null}
  </div>`;
}

/**
 * A button that asks first: a modal dialog names the consequence; only its confirm buttons act (one, or
 * several `choices` such as "now" and "at the period end"). Focus goes to the dismiss button, so Enter
 * pressed by habit changes nothing.
 */
export function ConfirmButton({
  label,
  accessibleLabel,
  question,
  confirmLabel,
  onConfirm,
  className,
  choices = [{ label: confirmLabel, run: onConfirm }],
  dismissLabel = 'Cancel',
}) {
  const dialog = useRef(null);
  const dismiss = useRef(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(undefined);
  const open = () => {
    setError(undefined);
    dialog.current.showModal();
    dismiss.current.focus();
  };
  const confirm = (run) => async () => {
    setBusy(true);
    try {
      await run();
      dialog.current?.close();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return html`<span class="confirm">
    <button type="button" class=${className ?? 'secondary'} aria-label=${accessibleLabel} onClick=${open}>${label}</button>
    <dialog ref=${dialog} aria-label=${confirmLabel}>
      <p>${question}</p>
      <${ErrorMessage} error=${error} />
      <div class="actions">
        ${choices.map((c) => html`<button type="button" class="danger" disabled=${busy} onClick=${confirm(c.run)}>${c.label}</button>`)}
        <button type="button" ref=${dismiss} class="secondary" onClick=${() => dialog.current.close()}>${dismissLabel}</button>
      </div>
    </dialog>
  </span>`;
}

/** A refusal found before asking the API, shaped like its: problems by field. */
export function invalid(byField) {
  const error = new Error('Not saved: see the fields marked.');
  error.fieldErrors = () => byField;
  return error;
}

/** A form's busy flag, its errors by field and its other error, around one submit (see `Field`). */
export function useSubmit(action) {
  const [busy, setBusy] = useState(false);
  const [errors, setErrors] = useState({});
  const [error, setError] = useState(undefined);
  const submit = async (event) => {
    event?.preventDefault();
    setBusy(true);
    setErrors({});
    setError(undefined);
    try {
      await action();
    } catch (e) {
      const byField = e.fieldErrors?.() ?? {};
      setErrors(byField);
      if (Object.keys(byField).length === 0) setError(e);
    } finally {
      setBusy(false);
    }
  };
  return { busy, errors, error, submit };
}

/** A secret shown exactly once, with a copy button and the warning that says so. */
export function SecretOnce({
  label,
  secret,
  onDismiss,
  warning = 'Copy this key now: Tollgate keeps only its hash and cannot show it again.',
}) {
  const id = useId();
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied(true);
    } catch {
      document.getElementById(id)?.select();
    }
  };
  return html`<section class="secret" aria-labelledby=${`${id}-title`}>
    <h3 id=${`${id}-title`}>${label}</h3>
    <p class="warning"><strong>Shown once.</strong> ${warning}</p>
    <div class="secret-row">
      <label class="visually-hidden" for=${id}>${label}</label>
      <input id=${id} type="text" readonly value=${secret} onFocus=${(e) => e.currentTarget.select()} />
      <button type="button" onClick=${copy}>Copy</button>
    </div>
    ${copied ? html`<p role="status">Copied to the clipboard.</p>` : null}
    <button type="button" class="secondary" onClick=${onDismiss}>I have stored it</button>
  </section>`;
}

export function formatDate(iso) {
  if (!iso) return '—';
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

export function formatValue(value) {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A plan's price as people read it: `19.00 USD / month`, `190.00 USD / 3 months`. */
export function priceText(price) {
  if (price.unitAmount === null) return 'variable amount';
  const every = price.intervalCount > 1 ? `${price.intervalCount} ${price.interval}s` : price.interval;
  return `${formatMoney(price.unitAmount, price.currency)}${every ? ` / ${every}` : ''}`;
}

/** An amount in the currency's smallest unit as people read it: `19.00 USD`. */
export function formatMoney(amount, currency) {
  return `${(amount / 100).toFixed(2)} ${currency.toUpperCase()}`;
}
