import { useEffect, useState } from 'react';

/** Copies through the Clipboard API, or, where the page is not a secure context (plain http on another host), through a selection. */
async function copyText(value: string): Promise<boolean> {
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(value);
      return true;
    } catch {
      /* refused: try the selection below */
    }
  }
  const area = document.createElement('textarea');
  area.value = value;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.append(area);
  area.select();
  // Deprecated, but the only way left where the Clipboard API is unavailable.
  const copied = document.execCommand('copy');
  area.remove();
  return copied;
}

/** A button named "Copy <what>" that copies `value`, and says so in a live region. */
export function CopyButton({ value, what }: { value: string; what: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  useEffect(() => {
    if (state === 'idle') return;
    const timer = setTimeout(() => setState('idle'), 2000);
    return () => clearTimeout(timer);
  }, [state]);
  return (
    <span className="copy">
      <button type="button" className="button button-small" onClick={() => void copyText(value).then((ok) => setState(ok ? 'copied' : 'failed'))}>
        Copy {what}
      </button>
      <span className="copy-status" role="status">
        {state === 'copied' ? 'Copied' : state === 'failed' ? 'Select and copy it by hand' : ''}
      </span>
    </span>
  );
}
