// Labelled form controls. Every control has a <label for>, the user-facing
// name first and the framework's own name (HF Trainer, PEFT, DeepSpeed) in
// code font, so "max_seq_length" finds the sequence-length box.

import { useEffect, useId, useState } from 'preact/hooks';
import styles from './style.module.css';

function Label({ id, label, name }) {
  return (
    <label class={styles.label} for={id}>
      <span>{label}</span>
      {name && <code class={styles.name}>{name}</code>}
    </label>
  );
}

/**
 * A whole-number box. Invalid text (empty, negative, a fraction) stays in the
 * box with a message and is not passed on, so the estimate never sees NaN.
 * An `optional` box may be emptied: empty passes null on (the field is not
 * given), and a null or '' value shows an empty box.
 */
export function NumberField({
  label,
  name,
  value,
  onChange,
  min = 1,
  max = 1e9,
  step = 1,
  hint,
  integer = true,
  optional = false,
}) {
  const id = useId();
  const unset = value === null || value === undefined || value === '';
  const [text, setText] = useState(unset ? '' : String(value));
  const [error, setError] = useState('');
  useEffect(() => {
    if (unset) {
      if (text.trim() !== '') {
        setText('');
        setError('');
      }
    } else if (Number(text) !== value) {
      setText(String(value));
      setError('');
    }
    // Only an outside change of `value` (URL restore) resets the text.
  }, [value]);
  const onInput = (e) => {
    const t = e.currentTarget.value;
    setText(t);
    if (optional && t.trim() === '') {
      setError('');
      onChange(null);
      return;
    }
    const n = Number(t);
    const valid =
      t.trim() !== '' &&
      Number.isFinite(n) &&
      (!integer || Number.isInteger(n)) &&
      n >= min &&
      n <= max;
    if (!valid) {
      setError(
        `Enter ${integer ? 'a whole number' : 'a number'} from ${min} to ${max.toLocaleString('en-US')}.`,
      );
      return;
    }
    setError('');
    onChange(n);
  };
  return (
    <div class={styles.field}>
      <Label id={id} label={label} name={name} />
      <input
        id={id}
        class={styles.input}
        type="number"
        inputMode={integer ? 'numeric' : 'decimal'}
        min={min}
        max={max}
        step={step}
        value={text}
        onInput={onInput}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={error || hint ? `${id}-note` : undefined}
      />
      <Note id={id} hint={hint} error={error} />
    </div>
  );
}

/** The line under a control: its error if any, else its hint; the control's aria-describedby target. */
function Note({ id, hint, error }) {
  if (!error && !hint) return null;
  return (
    <p id={`${id}-note`} class={error ? styles.error : styles.hint}>
      {error || hint}
    </p>
  );
}

/** A drop-down of {value, label} options; values may be numbers. */
export function SelectField({ label, name, value, options, onChange, hint, disabled = false }) {
  const id = useId();
  return (
    <div class={styles.field}>
      <Label id={id} label={label} name={name} />
      <select
        id={id}
        class={styles.input}
        value={String(value)}
        disabled={disabled}
        onChange={(e) => {
          const o = options.find((x) => String(x.value) === e.currentTarget.value);
          onChange(o ? o.value : e.currentTarget.value);
        }}
        aria-describedby={hint ? `${id}-note` : undefined}
      >
        {options.map((o) => (
          <option key={String(o.value)} value={String(o.value)}>
            {o.label}
          </option>
        ))}
      </select>
      <Note id={id} hint={hint} />
    </div>
  );
}

/** A check box with the framework flag name beside it. */
export function CheckboxField({ label, name, checked, onChange, hint, disabled = false }) {
  const id = useId();
  return (
    <div class={`${styles.field} ${styles.check}`}>
      <input
        id={id}
        type="checkbox"
        checked={checked}
        disabled={disabled}
        onChange={(e) => onChange(e.currentTarget.checked)}
      />
      <Label id={id} label={label} name={name} />
      {hint && <p class={styles.hint}>{hint}</p>}
    </div>
  );
}

/** A free-text box. */
export function TextField({
  label,
  name,
  value,
  onChange,
  hint,
  placeholder,
  type = 'text',
  autoComplete = 'off',
}) {
  const id = useId();
  return (
    <div class={styles.field}>
      <Label id={id} label={label} name={name} />
      <input
        id={id}
        class={styles.input}
        type={type}
        value={value}
        placeholder={placeholder}
        autoComplete={autoComplete}
        spellcheck={false}
        onInput={(e) => onChange(e.currentTarget.value)}
        aria-describedby={hint ? `${id}-note` : undefined}
      />
      <Note id={id} hint={hint} />
    </div>
  );
}
