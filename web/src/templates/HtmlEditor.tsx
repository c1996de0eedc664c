import { useEffect, useRef } from 'react';
import { Compartment, EditorState } from '@codemirror/state';
import { drawSelection, EditorView, highlightActiveLine, highlightActiveLineGutter, keymap, lineNumbers } from '@codemirror/view';
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { bracketMatching, HighlightStyle, indentOnInput, syntaxHighlighting } from '@codemirror/language';
import { tags } from '@lezer/highlight';
import { html } from '@codemirror/lang-html';

interface HtmlEditorProps {
  /** The id of the visible label ("Body"): CodeMirror's editable element takes it as aria-labelledby, so the field keeps its name. */
  labelledBy: string;
  /** Ids of the hint and error, as aria-describedby. */
  describedBy?: string;
  invalid?: boolean;
  value: string;
  onChange: (value: string) => void;
  onBlur?: () => void;
  /** Lets the label focus the editor when clicked. */
  editorRef?: (view: EditorView | null) => void;
}

/**
 * Token colours that keep WCAG AA contrast (4.5:1) on the editor's white and on the active line's
 * tint; CodeMirror's default style has lighter ones that axe-core reports.
 */
const highlightStyle = HighlightStyle.define([
  { tag: [tags.tagName, tags.typeName, tags.className], color: '#0b4f8a' },
  { tag: [tags.attributeName, tags.propertyName], color: '#6f2f91' },
  { tag: [tags.attributeValue, tags.string, tags.special(tags.string)], color: '#1b6b2f' },
  { tag: [tags.comment, tags.meta, tags.processingInstruction, tags.documentMeta], color: '#545b66', fontStyle: 'italic' },
  { tag: [tags.angleBracket, tags.punctuation, tags.separator, tags.operator, tags.bracket], color: '#40454d' },
  { tag: [tags.keyword, tags.atom, tags.bool, tags.modifier], color: '#8a1c4a' },
  { tag: [tags.number, tags.unit, tags.color, tags.character, tags.escape], color: '#8a4b00' },
  { tag: [tags.variableName, tags.definition(tags.variableName), tags.labelName], color: '#1f2328' },
  { tag: tags.invalid, color: '#b00020' },
  { tag: tags.heading, fontWeight: 'bold' },
  { tag: tags.emphasis, fontStyle: 'italic' },
  { tag: tags.strong, fontWeight: 'bold' },
  { tag: tags.link, textDecoration: 'underline' },
]);

/** The editor's frame: the app's monospace font, a quiet gutter, no outline of its own (the field draws the focus ring). */
const theme = EditorView.theme({
  '&': { fontSize: '13px', backgroundColor: '#fff' },
  '.cm-content': { fontFamily: 'var(--mono)', padding: '8px 0' },
  '.cm-gutters': { backgroundColor: '#f6f7f9', color: '#59606b', borderRight: '1px solid var(--border)' },
  '.cm-activeLine': { backgroundColor: '#f3f6ff' },
  '.cm-activeLineGutter': { backgroundColor: '#e7ecff', color: '#1f2328' },
  '&.cm-focused': { outline: 'none' },
});

/**
 * The HTML editor of a template's body: CodeMirror 6 with HTML highlighting, line numbers,
 * undo history and bracket matching. Tab indents; Escape then Tab moves on (CodeMirror's own
 * escape from the tab trap), which the field's hint says. The document is the form's value: typing
 * reports it through `onChange`, and a value set from outside (a loaded template) replaces it.
 */
export function HtmlEditor({ labelledBy, describedBy, invalid, value, onChange, onBlur, editorRef }: HtmlEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const attributeSlot = useRef(new Compartment());
  // The latest callbacks, read by the listeners made once with the editor.
  const callbacks = useRef({ onChange, onBlur, editorRef });
  useEffect(() => {
    callbacks.current = { onChange, onBlur, editorRef };
  });

  const attributes = {
    'aria-labelledby': labelledBy,
    ...(describedBy ? { 'aria-describedby': describedBy } : {}),
    ...(invalid ? { 'aria-invalid': 'true' } : {}),
  };
  const attributesKey = JSON.stringify(attributes);

  useEffect(() => {
    const editor = new EditorView({
      parent: host.current!,
      state: EditorState.create({
        doc: value,
        extensions: [
          lineNumbers(),
          highlightActiveLineGutter(),
          history(),
          drawSelection(),
          indentOnInput(),
          bracketMatching(),
          highlightActiveLine(),
          syntaxHighlighting(highlightStyle),
          html(),
          keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
          EditorView.lineWrapping,
          attributeSlot.current.of(EditorView.contentAttributes.of(attributes)),
          theme,
          EditorView.updateListener.of((update) => {
            if (update.docChanged) callbacks.current.onChange(update.state.doc.toString());
            if (update.focusChanged && !update.view.hasFocus) callbacks.current.onBlur?.();
          }),
        ],
      }),
    });
    view.current = editor;
    callbacks.current.editorRef?.(editor);
    return () => {
      callbacks.current.editorRef?.(null);
      editor.destroy();
      view.current = null;
    };
    // Made once; the value and the attributes are synchronised below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  useEffect(() => {
    view.current?.dispatch({
      effects: attributeSlot.current.reconfigure(EditorView.contentAttributes.of(JSON.parse(attributesKey) as Record<string, string>)),
    });
  }, [attributesKey]);

  useEffect(() => {
    const editor = view.current;
    if (editor && editor.state.doc.toString() !== value) {
      editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: value } });
    }
  }, [value]);

  return <div ref={host} className={invalid ? 'html-editor html-editor-invalid' : 'html-editor'} />;
}
