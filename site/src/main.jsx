import { render } from 'preact';
import { App } from './components/App/index.jsx';
import './styles/global.css';

render(<App />, document.getElementById('app'));
