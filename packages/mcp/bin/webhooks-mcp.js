#!/usr/bin/env node
// A committed file rather than dist/main.js itself: npm links a bin only when its file exists, and
// in a checkout dist/ is built after linking (by the root's prepare script).
import '../dist/main.js';
