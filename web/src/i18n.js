// Every string the pages show, by language. Adding a language is adding one table here; a key
// missing from it falls back to English.
const strings = {
  en: {
    send: "Send",
    stop: "Stop",
    regenerate: "Regenerate",
    start: "Start chat",
    run: "Run",
    newChat: "New chat",
    conversations: "Conversations",
    messages: "Messages",
    pinned: "Pinned",
    pin: "Pin",
    unpin: "Unpin",
    rename: "Rename",
    delete: "Delete",
    renamePrompt: "New name of the conversation",
    deleteConfirm: "Delete this conversation?",
    messagePlaceholder: "Type a message…",
    messageLabel: "Message",
    attach: "Attach a file",
    removeFile: "Remove",
    uploading: "Uploading…",
    uploadFailed: "Upload failed",
    like: "Like",
    dislike: "Dislike",
    copy: "Copy",
    speak: "Read aloud",
    record: "Speak",
    recording: "Stop recording",
    citations: "Citations",
    close: "Close",
    agentSteps: "Agent steps",
    tool: "Tool",
    toolInput: "Input",
    observation: "Result",
    thinking: "Thinking…",
    user: "You",
    assistant: "Assistant",
    inputs: "Before you start",
    required: "required",
    optional: "optional",
    yes: "Yes",
    choose: "Choose…",
    missingInput: "Please fill in: {name}",
    passcodeTitle: "This app needs a passcode",
    passcodeLabel: "Passcode",
    passcodeWrong: "That passcode is not right.",
    submit: "Submit",
    notFound: "This app is not available.",
    error: "Something went wrong: {message}",
    stopped: "Stopped.",
    formSubmitted: "Submitted: {action}",
    formTimedOut: "The form timed out.",
    suggested: "Suggested questions",
    nodes: "Progress",
    outputs: "Result",
    result: "Result",
    running: "Running…",
    succeeded: "Done",
    failed: "Failed",
    privacyPolicy: "Privacy policy",
    expand: "Expand",
    menu: "Conversations",
    untitled: "New conversation",
    query: "Query",
  },
};

let current = strings.en;

// setLanguage picks the table for a BCP 47 tag such as "en-US" (its language part), English
// when there is none.
export function setLanguage(tag) {
  const lang = String(tag || "en").toLowerCase().split("-")[0];
  current = strings[lang] || strings.en;
  document.documentElement.lang = strings[lang] ? lang : "en";
}

// t is the string for key, with {name} placeholders filled from vars.
export function t(key, vars) {
  let s = current[key] ?? strings.en[key] ?? key;
  if (vars) for (const [k, v] of Object.entries(vars)) s = s.replaceAll("{" + k + "}", String(v));
  return s;
}
