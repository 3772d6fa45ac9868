#!/usr/bin/env node
import '../dist/nodenet.js';
