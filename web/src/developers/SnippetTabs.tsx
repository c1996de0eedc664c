import { useId, useRef, useState, type KeyboardEvent } from 'react';
import { CopyButton } from '../components/CopyButton';
import type { Snippet } from './snippets';

/**
 * Code examples in tabs (the ARIA tabs pattern: arrow keys, Home and End move between tabs; the
 * panel is reachable with Tab), each with its copy button. `name` labels the tab list.
 */
export function SnippetTabs({ name, snippets }: { name: string; snippets: Snippet[] }) {
  const [selected, setSelected] = useState(0);
  const tabs = useRef<Array<HTMLButtonElement | null>>([]);
  const baseId = useId();
  const current = snippets[Math.min(selected, snippets.length - 1)];

  function onKeyDown(event: KeyboardEvent<HTMLDivElement>) {
    const last = snippets.length - 1;
    const next =
      event.key === 'ArrowRight'
        ? selected === last
          ? 0
          : selected + 1
        : event.key === 'ArrowLeft'
          ? selected === 0
            ? last
            : selected - 1
          : event.key === 'Home'
            ? 0
            : event.key === 'End'
              ? last
              : null;
    if (next === null) return;
    event.preventDefault();
    setSelected(next);
    tabs.current[next]?.focus();
  }

  return (
    <div className="snippet-tabs">
      <div role="tablist" aria-label={name} className="snippet-tablist" onKeyDown={onKeyDown}>
        {snippets.map((snippet, index) => (
          <button
            key={snippet.label}
            ref={(element) => {
              tabs.current[index] = element;
            }}
            type="button"
            role="tab"
            id={`${baseId}-tab-${index}`}
            aria-selected={index === selected}
            aria-controls={`${baseId}-panel`}
            tabIndex={index === selected ? 0 : -1}
            className="snippet-tab"
            onClick={() => setSelected(index)}
          >
            {snippet.label}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`${baseId}-panel`} aria-labelledby={`${baseId}-tab-${selected}`} tabIndex={0} className="snippet-panel">
        <pre className="snippet">
          <code>{current.code}</code>
        </pre>
        <CopyButton value={current.code} what={current.what} />
      </div>
    </div>
  );
}
